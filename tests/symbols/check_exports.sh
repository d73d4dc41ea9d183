#!/usr/bin/env bash
# The public symbols, checked with nm: libvkattn.a defines no global symbol and libvkattn.so
# exports none but the functions the public headers declare (vkattn_*), all of them, each at
# version VKATTN_<abi>; and the shared library's SONAME is libvkattn.so.<abi> (the ABI's version,
# VKATTN_SOVERSION in CMakeLists.txt: 0.6 while the major version is 0).
#
# usage: check_exports.sh libvkattn.a libvkattn.so ABI HEADER...
set -euo pipefail
archive=$1 shared=$2 abi=$3
shift 3
fail=0
problem() { echo "check_exports: $*" >&2; fail=1; }

# Declarations start at column 0 with their return type; the name is the identifier before '('.
declared=$(grep -ho '^[a-z].*\bvkattn_[a-z0-9_]*(' "$@" | grep -o 'vkattn_[a-z0-9_]*($' | tr -d '(' | sort -u)
# nm: "address type name" per defined global; the .so's names carry @@version, and its version
# node itself shows as an absolute (A) symbol.
in_archive=$(nm -g --defined-only "$archive" | awk 'NF == 3 {print $3}' | sort)
in_shared=$(nm -D --defined-only "$shared" | awk 'NF == 3 && $2 != "A" {print $3}' | sort)
versions=$(sed 's/^[^@]*@*//' <<<"$in_shared" | sort -u)
in_shared=$(sed 's/@.*//' <<<"$in_shared")

other=$(grep -v '^vkattn_' <<<"$in_archive" || true)
[ -z "$other" ] || problem "libvkattn.a defines $(wc -l <<<"$other") other globals, e.g. $(head -3 <<<"$other" | tr '\n' ' ')"
other=$(grep -v '^vkattn_' <<<"$in_shared" || true)
[ -z "$other" ] || problem "libvkattn.so exports $(wc -l <<<"$other") other symbols, e.g. $(head -3 <<<"$other" | tr '\n' ' ')"
[ "$versions" = "VKATTN_$abi" ] || problem "libvkattn.so's symbol versions: $(tr '\n' ' ' <<<"$versions")"
for lib in archive shared; do
  if [ "$lib" = archive ]; then names=$in_archive; else names=$in_shared; fi
  missing=$(comm -23 <(echo "$declared") <(echo "$names"))
  extra=$(comm -13 <(echo "$declared") <(grep '^vkattn_' <<<"$names" || true))
  [ -z "$missing" ] || problem "$lib lacks declared functions: $(tr '\n' ' ' <<<"$missing")"
  [ -z "$extra" ] || problem "$lib has vkattn_* the headers do not declare: $(tr '\n' ' ' <<<"$extra")"
done
soname=$(readelf -d "$shared" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libvkattn.so.$abi" ] || problem "SONAME is '$soname', expected libvkattn.so.$abi"

echo "headers declare $(wc -l <<<"$declared") functions; libvkattn.a defines $(wc -l <<<"$in_archive") globals;" \
     "libvkattn.so exports $(wc -l <<<"$in_shared") symbols (version $versions), SONAME $soname"
exit $fail
