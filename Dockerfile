# session-etl's container image, built from a checkout: `docker build -t session-etl .`
# (there is no published image). Run the scheduler with the data directory on a volume and the key
# from a secret:
#   docker run -d --ulimit core=0 -v session-etl-data:/data \
#     -e REPORTING_URL=https://reporting.example.com/graphql \
#     -e REPORTING_API_KEY_FILE=/run/secrets/reporting-key -v "$PWD/reporting.key:/run/secrets/reporting-key:ro" \
#     session-etl
# or another command: `docker run … session-etl node bin/session-etl.js export`.
# config/kubernetes/ runs this image as a CronJob (its command: node /app/bin/session-etl.js).
FROM node:20-slim
WORKDIR /app
COPY . .
# `npm ci` builds dist/ (its prepare script); the TypeScript compiler and the test tools go after.
RUN npm ci --no-audit --no-fund && npm prune --omit=dev --no-audit --no-fund \
  && mkdir -p /data && chown 10001:10001 /data
ENV SESSION_ETL_DATA_DIR=/data
# glibc's allocator, read once at start: two arenas, allocations of 128 KiB and more mapped on their
# own (and unmapped when freed), the heap trimmed from 128 KiB. Freed memory goes back to the kernel
# instead of staying in the process: a 1 M long-text backfill then completed in a 320 MiB container
# (docs/configuration.md "glibc's allocator").
ENV MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=131072 MALLOC_TRIM_THRESHOLD_=131072
VOLUME /data
USER 10001:10001
# node itself, in exec form, so that it is PID 1 and gets the SIGTERM of `docker stop` (and of
# Kubernetes): the scheduler stops cleanly (windows in flight commit) and exits 0. Not `npx` or
# `npm start`: npm runs the command under `sh -c`, which does not pass the signal on, and npm exits
# at once, which as PID 1 kills session-etl mid-run (docs/running.md, "In a container").
CMD ["node", "bin/session-etl.js", "schedule"]
