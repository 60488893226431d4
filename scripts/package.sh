#!/usr/bin/env bash
# The release artifact: a pushcamp binary that runs on a Linux machine with no Swift on it, packed
# with its licence (Apache-2.0), the README, the docs and the example alert rules.
#
#   scripts/package.sh                  build it (release, the Swift runtime and Foundation, libnghttp2
#                                       and SQLite linked in), strip it and pack it into dist/
#   scripts/package.sh --binary FILE    pack FILE as it is instead of building one (the tests pack the
#                                       build under test this way)
#   scripts/package.sh --output DIR     write into DIR instead of dist/
#   scripts/package.sh --sign KEY       sign the tarball with the SSH private key KEY (ssh-keygen -Y
#                                       sign, namespace pushcamp-release); --signer NAME is the
#                                       principal SIGNERS names (default releases@pushcamp)
#
# Writes DIR/pushcamp-VERSION-linux-ARCH.tar.gz and, beside it, its checksum (.sha256, the format
# `sha256sum --check` reads) and, with --sign, its signature (.sig, which `ssh-keygen -Y verify`
# checks: every CI runner has it). The tarball holds one folder, pushcamp-VERSION/, with
# bin/pushcamp, SHA256SUMS (the binary's checksum, which the CI workflow of `pushcamp init` pins),
# SIGNERS with --sign (the allowed_signers line init pins in that workflow), LICENSE, README.md,
# docs/ (docs/alerts/ has the example Prometheus rules) and VERSION (what `--version` says).
# docs/install.md says how to install it, docs/release.md how to publish one;
# scripts/install-test.sh proves it on a bare Debian.
set -euo pipefail
invoked=$PWD
cd "$(dirname "$0")/.."
source scripts/lib/setup.sh

binary=""
output=dist
key=""
signer=releases@pushcamp
while (($#)); do
    case "$1" in
        --binary) binary=$2; shift 2 ;;
        --output) output=$2; shift 2 ;;
        --sign) key=$2; [[ "$key" == /* ]] || key="$invoked/$key"; shift 2 ;;
        --signer) signer=$2; shift 2 ;;
        -h | --help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "package.sh: unknown argument $1 (try --help)" >&2; exit 64 ;;
    esac
done

if [[ -z "$binary" ]]; then
    [[ "$(uname -s)" == Linux ]] || { echo "package.sh builds the Linux binary; on $(uname -s), pass --binary" >&2; exit 1; }
    install_missing
    # libnghttp2 and SQLite from their static archives: pkg-config files of our own name a folder
    # holding only the .a files, so the linker's -lnghttp2 and -lsqlite3 find no .so.
    static_libs="$PWD/.build-dist/static-libs"
    mkdir -p "$static_libs/pkgconfig"
    for lib in libnghttp2 sqlite3; do
        name=$(pkg-config --libs-only-l "$lib" | sed 's/^-l\([^ ]*\).*/\1/')
        archive="$(pkg-config --variable=libdir "$lib")/lib$name.a"
        [[ -f "$archive" ]] || { echo "package.sh: $archive is missing (Debian: libnghttp2-dev, libsqlite3-dev)" >&2; exit 1; }
        ln -sf "$archive" "$static_libs/"
        printf 'Name: %s\nDescription: %s, linked statically by package.sh\nVersion: %s\nLibs: -L%s -l%s\nCflags:\n' \
            "$lib" "$lib" "$(pkg-config --modversion "$lib")" "$static_libs" "$name" > "$static_libs/pkgconfig/$lib.pc"
    done
    # The build time and kind are written anew (Plugins/BuildInfoPlugin).
    find .build-dist/plugins -name BuildCommit.swift -delete 2>/dev/null || true
    echo "building pushcamp for release into .build-dist (Swift runtime, libnghttp2 and SQLite linked in; 10 to 15 minutes the first time on 2 cores)…"
    started=$SECONDS
    # A build folder of its own: the static runtime compiles every module differently, and sharing
    # .build with the tests would rebuild everything each time one follows the other.
    flags=("${BUILD_FLAGS[@]}" --scratch-path .build-dist --static-swift-stdlib)
    PKG_CONFIG_PATH="$static_libs/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}" swift build "${flags[@]}" --product pushcamp
    echo "built in $((SECONDS - started)) s"
    binary="$(swift build "${flags[@]}" --show-bin-path)/pushcamp"
    # What must not be there: the Swift runtime, libnghttp2 or SQLite as shared libraries.
    if ldd "$binary" | grep -E 'libswift|libFoundation|libdispatch|libnghttp2|libsqlite3|libcurl'; then
        echo "package.sh: the binary still needs the libraries above" >&2
        exit 1
    fi
fi
[[ -x "$binary" ]] || { echo "package.sh: $binary is not an executable" >&2; exit 1; }
if [[ -n "$key" ]]; then
    [[ -r "$key" ]] || { echo "package.sh: --sign $key: no such key" >&2; exit 1; }
    [[ "$signer" =~ ^[A-Za-z0-9._@+-]+$ ]] || { echo "package.sh: --signer takes a name like releases@example.com" >&2; exit 1; }
    # The public half, as ssh-keygen -Y verify's allowed_signers file reads it.
    public=$(ssh-keygen -y -f "$key" | cut -d' ' -f1,2) || { echo "package.sh: $key is not an SSH private key" >&2; exit 1; }
fi

version=$("$binary" --version | cut -d' ' -f1)
name="pushcamp-$version-$(uname -s | tr '[:upper:]' '[:lower:]')-$(uname -m)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root="$work/pushcamp-$version"
mkdir -p "$root/bin"
cp "$binary" "$root/bin/pushcamp"
strip "$root/bin/pushcamp"
cp LICENSE README.md "$root/"
cp -R docs "$root/docs"
"$root/bin/pushcamp" --version > "$root/VERSION"
(cd "$root" && sha256sum bin/pushcamp > SHA256SUMS)
if [[ -n "$key" ]]; then
    printf '# Who signs this release: `ssh-keygen -Y verify -f SIGNERS -I %s -n pushcamp-release -s TARBALL.sig < TARBALL`\n%s %s\n' \
        "$signer" "$signer" "$public" > "$root/SIGNERS"
fi

mkdir -p "$output"
tarball="$output/$name.tar.gz"
# Owned by root, in a stable order, so two packings of one binary are the same bytes.
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime='@0' -C "$work" -cf - "pushcamp-$version" \
    | gzip -n -9 > "$tarball"
(cd "$output" && sha256sum "$name.tar.gz" > "$name.tar.gz.sha256")
if [[ -n "$key" ]]; then
    rm -f "$tarball.sig"
    ssh-keygen -q -Y sign -n pushcamp-release -f "$key" "$tarball"
    echo "signature: $tarball.sig (signer $signer)"
fi
echo "$tarball ($(du -h "$tarball" | cut -f1)): $(cat "$root/VERSION")"
echo "binary: $(cat "$root/SHA256SUMS")"
echo "tarball: $(cat "$tarball.sha256")"
