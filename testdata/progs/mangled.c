/* Functions whose symbols carry C++, Rust (legacy and v0) and OCaml
 * mangled names (set with asm labels), called from a freestanding _start:
 * the demangling test's program. */
// cflags: -static -nostdlib -fno-pie -no-pie -fno-stack-protector
typedef unsigned long u64;

__attribute__((noinline)) u64 cxx_fn(u64 x) __asm__("_ZN3foo3barEv");
__attribute__((noinline)) u64 cxx_tmpl(u64 x) __asm__("_ZNSt6vectorIiSaIiEE9push_backERKi");
__attribute__((noinline)) u64 rust_legacy(u64 x) __asm__("_ZN4core3fmt5write17h0123456789abcdefE");
__attribute__((noinline)) u64 rust_v0(u64 x) __asm__("_RNvCs1234_7mycrate3foo");
__attribute__((noinline)) u64 ocaml_fn(u64 x) __asm__("camlFoo__bar_123");

u64 cxx_fn(u64 x) { return x + 1; }
u64 cxx_tmpl(u64 x) { return x * 3; }
u64 rust_legacy(u64 x) { return x ^ 5; }
u64 rust_v0(u64 x) { return x - 7; }
u64 ocaml_fn(u64 x) { return x << 1; }

void _start(void)
{
	u64 v = ocaml_fn(rust_v0(rust_legacy(cxx_tmpl(cxx_fn(1)))));
	__asm__ volatile("syscall" : : "a"(60), "D"(v & 0x7f) : "rcx", "r11", "memory");
	__builtin_unreachable();
}
