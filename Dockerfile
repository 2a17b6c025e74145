# rentbridge: one image for every role (`rentbridge start`, `receiver`, `relay`, ...).
# Production is never a demo: the image's command is `start`, which needs PARTNER_API_URL (it exits 2
# naming it otherwise) and never starts the demo; only `start --demo`, said out loud, does that.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json prisma.config.ts ./
# npm ci applies patches/ and generates the Prisma client (postinstall), so both come first.
COPY patches ./patches
COPY prisma ./prisma
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build && npm prune --omit=dev

FROM node:24-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The ops console is static files beside its router's source (no build step).
COPY --from=build /app/src/ops/console ./src/ops/console
COPY --from=build /app/bin ./bin
COPY --from=build /app/prisma ./prisma
USER node
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --retries=6 CMD node -e "fetch('http://127.0.0.1:'+(process.env.HTTP_PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1)).catch(()=>process.exit(1))"
ENTRYPOINT ["node", "bin/rentbridge.js"]
CMD ["start"]
