# Shopping Arena image: `arena` as the entrypoint, e.g. `docker run IMAGE validator` or `IMAGE miner`.
# Multi-stage: the build stage compiles wheels with a toolchain; the runtime stage has only the
# virtual environment, and runs as an unprivileged user.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential \
    && rm -rf /var/lib/apt/lists/*
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/arena
WORKDIR /build
COPY pyproject.toml README.md ./src/
COPY arena ./src/arena
COPY judging ./src/judging
COPY storage ./src/storage
COPY neurons ./src/neurons
RUN /opt/arena/bin/pip install --upgrade pip \
    && /opt/arena/bin/pip install ./src \
    && /opt/arena/bin/arena --help >/dev/null

FROM ${PYTHON_IMAGE} AS runtime
LABEL org.opencontainers.image.title="shopping-arena" \
      org.opencontainers.image.description="Shopping Arena validator and miner (Bittensor subnet)" \
      org.opencontainers.image.licenses="Apache-2.0"
RUN groupadd --system --gid 10001 arena \
    && useradd --system --uid 10001 --gid arena --create-home --home-dir /home/arena --shell /usr/sbin/nologin arena \
    && install -d -o arena -g arena -m 0750 /data
COPY --from=build /opt/arena /opt/arena
ENV PATH=/opt/arena/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    ARENA_DATA_DIR=/data
USER arena
WORKDIR /data
# 8091: miner; 8092: validator (tool server, /health, /metrics).
EXPOSE 8091 8092
ENTRYPOINT ["arena"]
CMD ["--help"]
