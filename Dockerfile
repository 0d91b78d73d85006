# The router image: built from the checked-out source, model included, nothing downloaded at run time.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HF_HUB_OFFLINE=1 \
    PIP_NO_CACHE_DIR=1

WORKDIR /app
# An index serving CPU-only torch wheels keeps the image small; PyPI's default build is the CUDA one.
ARG PIP_EXTRA_INDEX_URL=""
COPY constraints.txt pyproject.toml README.md ./
COPY router ./router
COPY sync ./sync
RUN pip install -c constraints.txt torch && pip install -c constraints.txt .
COPY examples ./examples

RUN useradd --create-home router
USER router
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s \
  CMD python -c "import urllib.request,sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/readyz').status != 200)"
CMD ["router", "serve", "--host", "0.0.0.0", "--port", "8000", "--catalog", "examples/catalog", "--data", "/home/router/data"]
