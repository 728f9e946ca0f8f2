# Tally API. Runs the TypeScript sources through tsx (`npm start`), as in development: no build step.
FROM node:20-slim

WORKDIR /app

# Dependencies first, so source edits do not reinstall them. Dev dependencies stay: tsx runs the app.
# The KurrentDB client's native reader (@kurrent/bridge) ships prebuilt for glibc, which slim has.
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund && npm cache clean --force

COPY . .

# DATA_DIR keeps the generated signing/encryption keys (and PGlite when no DATABASE_URL is set).
RUN mkdir -p /app/data && chown node:node /app/data
ENV PORT=3000 \
    DATA_DIR=/app/data
USER node
EXPOSE 3000

CMD ["npm", "start"]
