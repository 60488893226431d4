# The Pushcamp image: Debian slim, the packaged binary (scripts/package.sh), `serve` as a user that
# is not root (uid and gid 10001, fixed, so volumes and Kubernetes' runAsNonRoot can rely on it), a
# health check on /healthz. docs/install.md says how to build and run it.
#
#   scripts/package.sh
#   docker build --build-arg VERSION=0.1.0 \
#     --build-arg SHA256=$(cut -d' ' -f1 dist/pushcamp-0.1.0-linux-x86_64.tar.gz.sha256) -t pushcamp:0.1.0 .
#
# SHA256 is the tarball's published checksum (its .sha256): the build refuses any other tarball.
# scripts/install-test.sh builds and runs it with podman.
ARG BASE=debian:bookworm-slim
FROM ${BASE}

ARG VERSION=0.1.0
ARG SHA256

# CA certificates: TLS to APNs, FCM and the App Store Server API is checked against them. tzdata:
# schedules and quiet hours in a time zone.
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates tzdata \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --gid 10001 pushcamp \
    && useradd --uid 10001 --gid 10001 --create-home --home-dir /var/lib/pushcamp \
        --shell /usr/sbin/nologin pushcamp

COPY dist/pushcamp-${VERSION}-linux-x86_64.tar.gz /tmp/pushcamp.tar.gz
RUN test -n "${SHA256}" || { echo "build with --build-arg SHA256=(the tarball's checksum, from its .sha256)" >&2; exit 1; } \
    && echo "${SHA256}  /tmp/pushcamp.tar.gz" | sha256sum --check --strict \
    && tar -xzf /tmp/pushcamp.tar.gz -C /opt \
    && rm /tmp/pushcamp.tar.gz \
    && cd /opt/pushcamp-${VERSION} && sha256sum --check --strict SHA256SUMS \
    && ln -s /opt/pushcamp-${VERSION}/bin/pushcamp /usr/local/bin/pushcamp

# The project (pushcamp.yaml, campaigns, templates, audiences) is mounted here; the SQLite journal
# (.pushcamp/ inside it) must be writable by uid 10001, or journal.url names PostgreSQL.
WORKDIR /srv/pushcamp
USER 10001:10001
EXPOSE 8080

# bash's /dev/tcp, so the image needs no curl: a 200 from /healthz, within 3 seconds.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/8080 && printf 'GET /healthz HTTP/1.0\\r\\n\\r\\n' >&3 && timeout 3 head -n 1 <&3 | grep -q ' 200 '"]

ENTRYPOINT ["pushcamp"]
CMD ["serve", "--listen", "0.0.0.0:8080"]
