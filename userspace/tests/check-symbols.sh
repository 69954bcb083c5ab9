#!/usr/bin/env bash
# Checks the built provider's dynamic symbols against the installed
# libibverbs: it exports nothing, every IBVERBS_* symbol it imports is
# defined by the installed libibverbs.so.1 under that version, the private
# ABI label matches the library name, and it imports no stdio printers
# (logging goes through __verbs_log).
#   tests/check-symbols.sh <libohca-rdmavNN.so> <NN>
set -euo pipefail
lib=$1 pabi=$2
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }

ibverbs=$(ldd "$lib" | awk '/libibverbs\.so\.1/ {print $3}')
[ -n "$ibverbs" ] || { echo "FAIL: $lib does not link libibverbs.so.1"; exit 1; }
echo "checking $lib against $ibverbs"

exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /[TDBRVWi]/ {print $3}')
if [ -z "$exported" ]; then ok "exports no symbols"; else bad "exports: $exported"; fi

provided=$(objdump -T "$ibverbs" | awk '$NF != "" && $2 != "*UND*" {print $(NF-1) " " $NF}')
if grep -qx "IBVERBS_PRIVATE_$pabi verbs_register_driver_$pabi" <<< "$provided"; then
	ok "installed libibverbs has private ABI $pabi (verbs_register_driver_$pabi)"
else
	bad "installed libibverbs does not provide IBVERBS_PRIVATE_$pabi verbs_register_driver_$pabi"
fi

while read -r ver sym; do
	if grep -qx "$ver $sym" <<< "$provided"; then
		ok "import $sym@$ver"
	else
		bad "import $sym@$ver not provided by $ibverbs"
	fi
done < <(objdump -T "$lib" | awk '/\*UND\*/ && $(NF-1) ~ /^\(?IBVERBS/ {v=$(NF-1); gsub(/[()]/, "", v); print v, $NF}')

printers=$(objdump -T "$lib" | awk '/\*UND\*/ {print $NF}' |
	grep -Ex '(v?f?printf|puts|fputs|perror|putchar|fputc|fwrite|__.*printf_chk)' || true)
if [ -z "$printers" ]; then ok "no stdio output functions imported"; else bad "imports $printers"; fi

if ldd -r "$lib" 2>&1 | grep -q "undefined symbol"; then
	bad "ldd -r reports undefined symbols"
else
	ok "ldd -r: all symbols resolve"
fi
[ "$fails" -eq 0 ] && echo "check-symbols: OK" || { echo "check-symbols: $fails failure(s)"; exit 1; }
