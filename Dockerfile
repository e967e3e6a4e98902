# syntax=docker/dockerfile:1
#
# One image for every role of the platform: the container's command is the `im` subcommand,
# e.g. `docker run im-eventlog gateway` (see docker-compose.yml and docs/operations.md).
#
# Checked by launcher/src/test/java/im/launcher/ComposeFileTest.java (parsed and cross-checked
# against the root pom and the launcher) and built for real by ops/compose-smoke.sh (podman, with
# local base images passed as the build arguments below).

# The base images, as build arguments so that a machine without registry access can substitute
# local equivalents (ops/compose-smoke.sh does: --build-arg BUILD_IMAGE=... RUNTIME_IMAGE=...).
ARG BUILD_IMAGE=maven:3.9-eclipse-temurin-17
ARG RUNTIME_IMAGE=eclipse-temurin:17-jre

# ---- build: the shaded launcher jar (Maven + Temurin 17) ----------------------------------
FROM ${BUILD_IMAGE} AS build
WORKDIR /src
# The poms first, so the dependency layer is rebuilt only when a pom changes. Every module of
# the root pom must be here, or Maven cannot read the reactor.
COPY pom.xml ./
COPY protocol/pom.xml protocol/
COPY topics/pom.xml topics/
COPY infra/pom.xml infra/
COPY embedded/pom.xml embedded/
COPY testkit/pom.xml testkit/
COPY store/pom.xml store/
COPY relay/pom.xml relay/
COPY streams/pom.xml streams/
COPY delivery/pom.xml delivery/
COPY sweeper/pom.xml sweeper/
COPY gateway/pom.xml gateway/
COPY client/pom.xml client/
COPY system-tests/pom.xml system-tests/
COPY launcher/pom.xml launcher/
COPY reliability/pom.xml reliability/
COPY bench/pom.xml bench/
COPY examples/pom.xml examples/
# A package run without sources downloads every dependency and plugin the real build needs
# (dependency:go-offline would also fetch every optional dependency of every library).
RUN mvn -B -q -pl launcher -am -DskipTests package
# Then the sources (.dockerignore keeps target/, var/ and .git/ out).
COPY . .
RUN mvn -B -DskipTests -pl launcher -am package

# ---- runtime: JRE only, non-root ------------------------------------------------------------
FROM ${RUNTIME_IMAGE}
# curl runs the compose health checks (GET /readyz); /usr/local/bin/im is the CLI for operators
# inside the container (`docker compose exec gateway-1 im admin ...`: the admin listener is not published).
RUN apt-get update \
    && apt-get install -y --no-install-recommends curl \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --user-group --uid 10001 --no-create-home --shell /usr/sbin/nologin im \
    && printf '#!/bin/sh\nexec java -XX:TieredStopAtLevel=1 -jar /app/im.jar "$@"\n' > /usr/local/bin/im \
    && chmod 755 /usr/local/bin/im
WORKDIR /app
COPY --from=build /src/launcher/target/im.jar /app/im.jar
USER im
# IM_GATEWAY_PORT (gateway: WebSocket, web client), IM_ADMIN_PORT (gateway: admin API, /healthz
# /readyz /metrics; publish it to no one) and IM_OPS_PORT (relay, delivery, sweeper: /healthz /readyz
# /metrics); all three are the configuration defaults.
EXPOSE 8080 8081 9090
# Kafka Streams state (IM_STATE_DIR empty) goes to a fresh directory under /tmp on every start.
ENTRYPOINT ["java", "-XX:MaxRAMPercentage=75", "-XX:+ExitOnOutOfMemoryError", "-jar", "/app/im.jar"]
CMD ["--help"]
