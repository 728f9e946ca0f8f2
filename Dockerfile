# Tally API image: the TypeScript is compiled once in a build stage; the runtime stage has the
# production dependencies and dist/ only, and runs node directly (PID 1 gets docker stop's SIGTERM:
# the server drains its requests in flight, stops the projections and exits).
# Node 26: the Active LTS line (Node 24 moved to maintenance on 2026-10-20).
ARG NODE_IMAGE=node:26-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npx tsc -p tsconfig.build.json

FROM ${NODE_IMAGE}
WORKDIR /app
# Production dependencies only. The KurrentDB client's native reader (@kurrent/bridge) ships
# prebuilt for glibc, which slim has.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist

# DATA_DIR keeps the generated signing/encryption keys (and PGlite when no DATABASE_URL is set).
RUN mkdir -p /app/data && chown node:node /app/data
ENV PORT=3000 \
    DATA_DIR=/app/data
USER node
EXPOSE 3000

HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]

# The operator CLI in the image: node dist/cli/index.js <command> (bin/tally.js needs tsx, a dev dependency).
CMD ["node", "dist/main.js"]
