#!/usr/bin/env bash
# Builds target/debian/pearl_VERSION_ARCH.deb: pearld and pearlctl, pearld.service (systemd),
# /etc/pearl/pearl.yaml (a conffile), man pages generated from the commands' own help,
# pearlctl's shell completions, and the documentation the packaged README points to; and
# target/debian/pearl-dev_VERSION_all.deb: the C plugin SDK header. Needs dpkg-dev
# (dpkg-deb, dpkg-shlibdeps) beside cargo.
# Usage: bash scripts/build-deb.sh [--prebuilt] [--version V]   (prints the packages' paths)
# --prebuilt packages target/release's pearld and pearlctl as they are, e.g. the ones the test
# suite has just built and tested: building only these two resolves dependency features apart
# from the workspace build (getrandom under rustls, bitflags under wasmi lose `std`), which recompiles
# them and all above them for minutes.
# --version V packages under another version than Cargo's VERSION-1 (an upgrade test's older or newer
# package); packaging/debian/changelog's top entry must otherwise be Cargo's version.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
prebuilt="" version=""
while (($#)); do
    case "$1" in
        --prebuilt) prebuilt=1 ;;
        --version) version="${2:?--version needs a version}"; shift ;;
        *) echo "usage: $0 [--prebuilt] [--version V]" >&2; exit 2 ;;
    esac
    shift
done
if [[ -n $prebuilt ]]; then
    for bin in pearld pearlctl; do
        [[ -x target/release/$bin ]] || { echo "build-deb: --prebuilt: target/release/$bin is not built" >&2; exit 1; }
    done
else
    cargo build --release -q -p pearld -p pearlctl
fi
cargo_version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)"
maintainer="$(sed -n 's/^authors = \["\(.*\)"\]/\1/p' Cargo.toml | head -1)"
[[ -n $maintainer ]] || { echo "build-deb: Cargo.toml's [workspace.package] names no authors (the Maintainer)" >&2; exit 1; }
changelog_version="$(sed -n '1s/^pearl (\([^)]*\)).*/\1/p' packaging/debian/changelog)"
if [[ -z $version ]]; then
    # Cargo's version, Debian revision 1: the packaging is kept apart from the code.
    version="$cargo_version-1"
    [[ $changelog_version == "$version" ]] || {
        echo "build-deb: packaging/debian/changelog's top entry is $changelog_version, Cargo.toml's version $version: add an entry" >&2
        exit 1
    }
fi
arch="$(dpkg --print-architecture)"
stage="target/debian/pearl_${version}_${arch}"
dev="target/debian/pearl-dev_${version}_all"
rm -rf "$stage" "$dev"
doc="$stage/usr/share/doc/pearl"
install -d "$stage/DEBIAN" "$stage/usr/bin" "$stage/lib/systemd/system" "$stage/etc/pearl" \
    "$stage/usr/share/man/man1" "$stage/usr/share/man/man5" "$doc" \
    "$stage/usr/share/bash-completion/completions" "$stage/usr/share/zsh/vendor-completions" \
    "$stage/usr/share/fish/vendor_completions.d"
install -m 755 -s target/release/pearld target/release/pearlctl "$stage/usr/bin/"
install -m 644 packaging/debian/pearld.service "$stage/lib/systemd/system/"
install -m 644 packaging/debian/pearl.yaml "$stage/etc/pearl/"
install -m 755 packaging/debian/postinst packaging/debian/prerm packaging/debian/postrm "$stage/DEBIAN/"
install -D -m 644 packaging/debian/lintian-overrides "$stage/usr/share/lintian/overrides/pearl"
echo /etc/pearl/pearl.yaml > "$stage/DEBIAN/conffiles"

target/release/pearld --man > "$stage/usr/share/man/man1/pearld.1"
target/release/pearlctl man "$stage/usr/share/man/man1"
gzip -9n "$stage"/usr/share/man/man1/*.1
# Checked in, and held current by pearld's unit test (reference.rs).
gzip -9n < docs/man/pearl.yaml.5 > "$stage/usr/share/man/man5/pearl.yaml.5.gz"
target/release/pearlctl completions bash > "$stage/usr/share/bash-completion/completions/pearlctl"
target/release/pearlctl completions zsh > "$stage/usr/share/zsh/vendor-completions/_pearlctl"
target/release/pearlctl completions fish > "$stage/usr/share/fish/vendor_completions.d/pearlctl.fish"
# The README's links are relative (docs/…, examples/…): the tree keeps them working.
install -m 644 README.md "$doc/"
while IFS= read -r -d '' f; do
    install -D -m 644 "$f" "$doc/$f"
done < <(find docs examples -type f ! -name '*.lock' -print0)
# Debian's changelog, the version packaged on top.
{
    if [[ $version != "$changelog_version" ]]; then
        printf 'pearl (%s) unstable; urgency=medium\n\n  * Packaged from the tree of %s.\n\n -- %s  %s\n\n' \
            "$version" "$changelog_version" "$maintainer" "$(date -R -d @"${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}")"
    fi
    cat packaging/debian/changelog
} | gzip -9n > "$doc/changelog.Debian.gz"
copyright() {
    cat <<COPYRIGHT
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: pearl
Upstream-Contact: $maintainer

Files: *
Copyright: 2026 PEARL developers
License: Apache-2.0
 On Debian systems the full text is in /usr/share/common-licenses/Apache-2.0.
COPYRIGHT
}
copyright > "$doc/copyright"

# Depends: the shared libraries the binaries link, at the versions their symbols need, as
# dpkg-shlibdeps reads them from the ELF files and the installed libraries' symbols files.
shlibs="$(mktemp -d)"
trap 'rm -rf "$shlibs"' EXIT
mkdir "$shlibs/debian"
printf 'Source: pearl\n\nPackage: pearl\nArchitecture: any\n' > "$shlibs/debian/control"
libs="$(cd "$shlibs" && dpkg-shlibdeps -O -e"$root/$stage/usr/bin/pearld" -e"$root/$stage/usr/bin/pearlctl" 2>/dev/null \
    | sed -n 's/^shlibs:Depends=//p')"
[[ -n $libs ]] || { echo "build-deb: dpkg-shlibdeps found no shared libraries in pearld and pearlctl" >&2; exit 1; }

size="$(du -sk --exclude=DEBIAN "$stage" | cut -f1)"
cat > "$stage/DEBIAN/control" <<CONTROL
Package: pearl
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $size
Depends: $libs, iproute2
Recommends: frr, bird2
Suggests: pearl-dev, iperf3, tcpdump
Section: net
Priority: optional
Description: programmable virtual router platform
 PEARL runs many isolated virtual routers on one Linux server, each with its
 own control plane (FRR, BIRD or any program in its own network namespace),
 its own tables and queues, and a data plane that is a fast user-space path,
 the kernel, or the owner's own program. pearld is the daemon (a systemd
 service reading /etc/pearl/pearl.yaml); pearlctl its command-line client.
CONTROL

# pearl-dev: plugins in C are written against the header.
install -d "$dev/DEBIAN" "$dev/usr/include" "$dev/usr/share/doc/pearl-dev"
install -m 644 crates/plugin-sdk/c/pearl_plugin.h "$dev/usr/include/"
copyright > "$dev/usr/share/doc/pearl-dev/copyright"
cp "$doc/changelog.Debian.gz" "$dev/usr/share/doc/pearl-dev/"
sed -e "s/@VERSION@/$version/" -e "s/@MAINTAINER@/$maintainer/" -e "s/@SIZE@/$(du -sk --exclude=DEBIAN "$dev" | cut -f1)/" \
    packaging/debian/pearl-dev.control > "$dev/DEBIAN/control"

for s in "$stage" "$dev"; do
    dpkg-deb --root-owner-group -Zxz --build "$s" "target/debian/" >/dev/null
done
echo "$root/target/debian/pearl_${version}_${arch}.deb"
echo "$root/target/debian/pearl-dev_${version}_all.deb"
