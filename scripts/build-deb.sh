#!/usr/bin/env bash
# Builds target/debian/pearl_VERSION_ARCH.deb: pearld and pearlctl, pearld.service (systemd),
# /etc/pearl/pearl.yaml (a conffile), man pages generated from the commands' own help, and
# pearlctl's shell completions. Needs only dpkg-deb (Debian's dpkg) beside cargo.
# Usage: bash scripts/build-deb.sh [--prebuilt]   (prints the package's path)
# --prebuilt packages target/release's pearld and pearlctl as they are, e.g. the ones the test
# suite has just built and tested: building only these two resolves dependency features apart
# from the workspace build (getrandom under rustls, bitflags under wasmi lose `std`), which recompiles
# them and all above them for minutes.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
case "${1:-}" in
    --prebuilt)
        for bin in pearld pearlctl; do
            [[ -x target/release/$bin ]] || { echo "build-deb: --prebuilt: target/release/$bin is not built" >&2; exit 1; }
        done ;;
    "") cargo build --release -q -p pearld -p pearlctl ;;
    *) echo "usage: $0 [--prebuilt]" >&2; exit 2 ;;
esac
version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)"
arch="$(dpkg --print-architecture)"
stage="target/debian/pearl_${version}_${arch}"
rm -rf "$stage"
install -d "$stage/DEBIAN" "$stage/usr/bin" "$stage/lib/systemd/system" "$stage/etc/pearl" \
    "$stage/usr/share/man/man1" "$stage/usr/share/doc/pearl/examples" \
    "$stage/usr/share/bash-completion/completions" "$stage/usr/share/zsh/vendor-completions" \
    "$stage/usr/share/fish/vendor_completions.d" "$stage/usr/include"
install -m 755 -s target/release/pearld target/release/pearlctl "$stage/usr/bin/"
install -m 644 packaging/debian/pearld.service "$stage/lib/systemd/system/"
install -m 644 packaging/debian/pearl.yaml "$stage/etc/pearl/"
install -m 755 packaging/debian/postinst packaging/debian/prerm packaging/debian/postrm "$stage/DEBIAN/"
echo /etc/pearl/pearl.yaml > "$stage/DEBIAN/conffiles"

target/release/pearld --man > "$stage/usr/share/man/man1/pearld.1"
target/release/pearlctl man "$stage/usr/share/man/man1"
gzip -9n "$stage"/usr/share/man/man1/*.1
target/release/pearlctl completions bash > "$stage/usr/share/bash-completion/completions/pearlctl"
target/release/pearlctl completions zsh > "$stage/usr/share/zsh/vendor-completions/_pearlctl"
target/release/pearlctl completions fish > "$stage/usr/share/fish/vendor_completions.d/pearlctl.fish"
install -m 644 README.md docs/ARCHITECTURE.md docs/PLUGINS.md "$stage/usr/share/doc/pearl/"
find examples -maxdepth 1 -type f -exec install -m 644 -t "$stage/usr/share/doc/pearl/examples/" {} +
# Plugins in C are written against the header.
install -m 644 crates/plugin-sdk/c/pearl_plugin.h "$stage/usr/include/"
cat > "$stage/usr/share/doc/pearl/copyright" <<COPYRIGHT
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: pearl
Files: *
License: Apache-2.0
 On Debian systems the full text is in /usr/share/common-licenses/Apache-2.0.
COPYRIGHT

size="$(du -sk --exclude=DEBIAN "$stage" | cut -f1)"
cat > "$stage/DEBIAN/control" <<CONTROL
Package: pearl
Version: $version
Architecture: $arch
Maintainer: PEARL developers <pearl@localhost>
Installed-Size: $size
Depends: libc6, iproute2
Recommends: frr, bird2
Suggests: iperf3, tcpdump
Section: net
Priority: optional
Homepage: https://localhost/pearl
Description: programmable virtual router platform
 PEARL runs many isolated virtual routers on one Linux server, each with its
 own control plane (FRR, BIRD or any program in its own network namespace),
 its own tables and queues, and a data plane that is a fast user-space path,
 the kernel, or the owner's own program. pearld is the daemon (a systemd
 service reading /etc/pearl/pearl.yaml); pearlctl its command-line client.
CONTROL
dpkg-deb --root-owner-group -Zxz --build "$stage" "target/debian/" >/dev/null
echo "$root/target/debian/pearl_${version}_${arch}.deb"
