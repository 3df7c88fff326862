# build-setup.sh - what the build.sh of both fakes (tests/fake-cuda, tests/fake-hip) start
# with, sourced after they set `here` (their own folder): the OUTDIR argument checked and made
# absolute as `out`, the compiler `cc` ($CC, default cc), the C flags `flags` (-O1 -Wall
# -Werror -ffp-contract=off, then $CFLAGS) with this folder (fake_common.h) on the include path.
if [ $# -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
mkdir -p "$1"
out=$(cd "$1" && pwd)
cc=${CC:-cc}
flags="-O1 -Wall -Werror -ffp-contract=off -I$(cd "$here/../fake-common" && pwd) ${CFLAGS:-}"
