# The Pushcamp image: Debian slim, the packaged binary (scripts/package.sh), `serve` as a user that
# is not root, a health check on /healthz. docs/install.md says how to run it.
#
#   scripts/package.sh && docker build --build-arg VERSION=0.1.0 -t pushcamp:0.1.0 .
#
# It cannot be built on the machines Pushcamp is made on (no Docker engine there); CI's
# scripts/install-test.sh stands in for it: the same tarball, on a bare Debian root, as a user.
FROM debian:bookworm-slim

ARG VERSION=0.1.0

# CA certificates: TLS to APNs and to the App Store Server API is checked against them. tzdata:
# schedules and quiet hours in a time zone.
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates tzdata \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --create-home --home-dir /var/lib/pushcamp --shell /usr/sbin/nologin pushcamp

# ADD unpacks a local tarball: /opt/pushcamp-VERSION/{bin/pushcamp,README.md,docs,SHA256SUMS}.
ADD dist/pushcamp-${VERSION}-linux-x86_64.tar.gz /opt/
RUN cd /opt/pushcamp-${VERSION} && sha256sum --check --strict SHA256SUMS \
    && ln -s /opt/pushcamp-${VERSION}/bin/pushcamp /usr/local/bin/pushcamp

# The project (pushcamp.yaml, campaigns, templates, audiences) is mounted here; the SQLite journal
# (.pushcamp/ inside it) must be writable by the user, or journal.url names PostgreSQL.
WORKDIR /srv/pushcamp
USER pushcamp
EXPOSE 8080

# bash's /dev/tcp, so the image needs no curl: a 200 from /healthz, within 3 seconds.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/8080 && printf 'GET /healthz HTTP/1.0\\r\\n\\r\\n' >&3 && timeout 3 head -n 1 <&3 | grep -q ' 200 '"]

ENTRYPOINT ["pushcamp"]
CMD ["serve", "--listen", "0.0.0.0:8080"]
