# Shared by scripts/setup.sh, scripts/test.sh and .ci/run (sourced, not run).

# One build configuration for everything: the demo, the tests, the benchmarks. Release, because
# that is what sends at the wire's speed; the tests build on top of it (only their own targets).
BUILD_FLAGS=(-c release)

# Installs what the build and the tests need and this machine lacks: Debian/Ubuntu packages
# (as root, or through sudo), or Homebrew's on macOS.
install_missing() {
    local missing=()
    if [[ "$(uname -s)" == Darwin ]]; then
        command -v pkg-config >/dev/null || missing+=(pkg-config)
        pkg-config --exists libnghttp2 2>/dev/null || missing+=(nghttp2)
        if ((${#missing[@]})); then
            echo "installing with Homebrew: ${missing[*]}"
            brew install "${missing[@]}"
        fi
        return
    fi
    command -v pkg-config >/dev/null || missing+=(pkg-config)
    pkg-config --exists sqlite3 2>/dev/null || missing+=(libsqlite3-dev)
    pkg-config --exists libnghttp2 2>/dev/null || missing+=(libnghttp2-dev)
    # Time zone data: schedules in a zone (and the DST tests) read /usr/share/zoneinfo.
    [[ -f /usr/share/zoneinfo/Australia/Lord_Howe ]] || missing+=(tzdata)
    # FoundationNetworking (the App Store Server API client, the CLI tests) needs libcurl.
    ldconfig -p 2>/dev/null | grep -q 'libcurl\.so\.4' || missing+=(libcurl4)
    if ((${#missing[@]})); then
        local sudo=()
        [[ $(id -u) -eq 0 ]] || sudo=(sudo)
        echo "installing with apt-get: ${missing[*]}"
        "${sudo[@]}" apt-get update -qq
        DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${missing[@]}"
    fi
}

# What the tests need beyond the build: PostgreSQL's server (Debian's `postgresql`), for the
# throwaway cluster the journal's contract suite and the many-node tests run against
# (scripts/postgres.sh), `ip` (iproute2) for the partition test's network namespace, and
# Debian's Chromium, which the console's browser tests drive headless. Not installed by setup.sh:
# sending with SQLite needs none of them.
install_test_missing() {
    [[ "$(uname -s)" == Darwin ]] && return
    local missing=()
    compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || missing+=(postgresql)
    # ip netns and veth pairs, for the partition test.
    [[ -x /usr/sbin/ip ]] || missing+=(iproute2)
    command -v chromium >/dev/null || missing+=(chromium)
    # A real HTTP proxy, for sending through CONNECT tunnels.
    [[ -x /usr/bin/tinyproxy ]] || missing+=(tinyproxy)
    # The CI workflow's test: git (what a pull request changes) and ssh-keygen (a signed release).
    command -v git >/dev/null || missing+=(git)
    command -v ssh-keygen >/dev/null || missing+=(openssh-client)
    ((${#missing[@]})) || return 0
    local sudo=()
    [[ $(id -u) -eq 0 ]] || sudo=(sudo)
    echo "installing with apt-get: ${missing[*]}"
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${missing[@]}"
}

# The built binary's folder.
bin_path() {
    swift build "${BUILD_FLAGS[@]}" --show-bin-path
}
