#!/usr/bin/env bash
# The brief fuzzers of `make test`: each target for a count of executions.
#   [LDFLAGS=...] scripts/fuzz-brief.sh PKG:TARGET:N ...   (FUZZ_BRIEF in the Makefile)
#
# One instrumented test binary per package, built once (`go test -c -fuzz`)
# and run once per target, where `go test -fuzz` per target would load the
# packages and link the binary again each time: operators/sources has seven
# targets. The binary is run as go test runs it: in the package's directory
# (testdata/fuzz is the seed corpus), with go test's cache of interesting
# inputs ($GOCACHE/fuzz/IMPORTPATH) and a timeout.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cache=$(go env GOCACHE)/fuzz
built=""
for f in "$@"; do
	pkg=${f%%:*}; rest=${f#*:}; target=${rest%%:*}; n=${rest#*:}
	bin="$tmp/$(echo "$pkg" | tr -c 'A-Za-z0-9\n' '_').test"
	case " $built " in
	*" $pkg "*) ;;
	*)
		echo "go test -c -fuzz . $pkg"
		go test -ldflags="${LDFLAGS:-}" -c -fuzz . -o "$bin" "$pkg"
		built="$built $pkg"
		;;
	esac
	importpath=$(go list "$pkg")
	echo "go test $pkg -run '^\$' -fuzz '^$target\$' -fuzztime ${n}x"
	(cd "$pkg" && "$bin" -test.paniconexit0 -test.timeout=10m -test.run='^$' \
		-test.fuzz="^$target\$" -test.fuzztime="${n}x" -test.fuzzminimizetime=100x \
		-test.fuzzcachedir="$cache/$importpath")
done
