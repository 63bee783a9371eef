/* A stand-in for an OCaml program built for magic-trace: no OCaml runtime,
 * only code addresses and the .note.ocaml_eh note that lists its exception
 * traps (owner "OCaml", type 1: a base, then zero-terminated lists of
 * entertraps, pushtraps, poptraps), relocated through .stapsdt.base as
 * magic-trace's mode A reads it. Never run: tests/toperfetto.bats builds an
 * event stream on its addresses (from nm).
 * f pushes a trap at f_pushtrap, runs its body (calling g), pops the trap
 * at f_poptrap; f_handler is the exception handler.
 * cflags: below is read by the Makefile. */
// cflags: -static -nostdlib -fno-pie -no-pie
__asm__(".text\n"
	".globl caml_main\ncaml_main:\n nop\n nop\n nop\n ret\n"
	".globl f\nf:\n nop\n"
	".globl f_pushtrap\nf_pushtrap:\n nop\n nop\n"
	".globl f_body\nf_body:\n nop\n nop\n"
	".globl f_poptrap\nf_poptrap:\n nop\n"
	".globl f_handler\nf_handler:\n nop\n"
	".globl f_ret\nf_ret:\n ret\n"
	".globl g\ng:\n nop\n ret\n"
	".section .stapsdt.base,\"a\",@progbits\n"
	"stapsdt_base: .space 1\n"
	".section .note.ocaml_eh,\"a\",@note\n"
	".balign 4\n.long 6\n.long 56\n.long 1\n.asciz \"OCaml\"\n.balign 4\n"
	/* recorded as if linked 0x100 lower (as prelink moves a binary):
	 * the reader adds back .stapsdt.base's address less the recorded base */
	".quad stapsdt_base - 0x100\n"
	".quad f_handler - 0x100, 0\n"
	".quad f_pushtrap - 0x100, 0\n"
	".quad f_poptrap - 0x100, 0\n"
	".text\n");

void _start(void)
{
	for (;;)
		;
}
