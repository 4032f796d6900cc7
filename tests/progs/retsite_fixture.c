/* retsite_fixture.c: functions of known bytes for tests/unit_retsite.c (x86-64 GNU as):
 * each shape of body core/retsite.c must tell apart. Not run, only read. */
__asm__(
	".text\n"
	".globl rs_ret_first\n.type rs_ret_first,@function\nrs_ret_first:\n"
	"	ret\n"
	".size rs_ret_first, .-rs_ret_first\n"
	/* one ret at +2 */
	".globl rs_one\n.type rs_one,@function\nrs_one:\n"
	"	xorl %eax,%eax\n"
	"	ret\n"
	".size rs_one, .-rs_one\n"
	/* two rets, at +9 and +12 */
	".globl rs_two\n.type rs_two,@function\nrs_two:\n"
	"	testl %edi,%edi\n"
	"	jne 1f\n"
	"	movl $1,%eax\n"
	"	ret\n"
	"1:	xorl %eax,%eax\n"
	"	ret\n"
	".size rs_two, .-rs_two\n"
	/* an indirect jump */
	".globl rs_indirect\n.type rs_indirect,@function\nrs_indirect:\n"
	"	testl %edi,%edi\n"
	"	jmp *%rax\n"
	"	ret\n"
	".size rs_indirect, .-rs_indirect\n"
	/* a tail call */
	".globl rs_tail\n.type rs_tail,@function\nrs_tail:\n"
	"	nop\n"
	"	jmp rs_one\n"
	".size rs_tail, .-rs_tail\n"
	/* a tail call to a function that leaves by an indirect jump */
	".globl rs_tail_indirect\n.type rs_tail_indirect,@function\nrs_tail_indirect:\n"
	"	nop\n"
	"	jmp rs_indirect\n"
	".size rs_tail_indirect, .-rs_tail_indirect\n"
	/* no return instruction */
	".globl rs_noret\n.type rs_noret,@function\nrs_noret:\n"
	"	nop\n"
	"	ud2\n"
	".size rs_noret, .-rs_noret\n"
	/* a GCC-style cold part: rets at rs_cold+4 and rs_cold.cold+2 */
	".globl rs_cold\n.type rs_cold,@function\nrs_cold:\n"
	"	testl %edi,%edi\n"
	"	jne rs_cold.cold\n"
	"	ret\n"
	".size rs_cold, .-rs_cold\n"
	".type rs_cold.cold,@function\nrs_cold.cold:\n"
	"	xorl %eax,%eax\n"
	"	ret\n"
	".size rs_cold.cold, .-rs_cold.cold\n"
	/* a mangled (C++) name: auto chooses its return instructions; ret at +2 */
	".globl _Z5rs_cxxv\n.type _Z5rs_cxxv,@function\n_Z5rs_cxxv:\n"
	"	xorl %eax,%eax\n"
	"	ret\n"
	".size _Z5rs_cxxv, .-_Z5rs_cxxv\n"
	/* a ret byte hidden in an instruction the linear sweep sees: jmp over one junk byte
	 * (0xb8, a mov's opcode: the sweep then takes the real mov's bytes, 0xc3 among
	 * them, as its immediate, out of step); the real ret is at +13 */
	".globl rs_hidden\n.type rs_hidden,@function\nrs_hidden:\n"
	"	jmp 1f\n"
	"	.byte 0xb8\n"
	"1:	movl $0xc3909090,%ecx\n"
	"	movl %ecx,%eax\n"
	"	ret\n"
	".size rs_hidden, .-rs_hidden\n"
	/* a table after the ret, inside the symbol: its 0xc3 at +13 is data, never reached */
	".globl rs_table\n.type rs_table,@function\nrs_table:\n"
	"	leaq 1f(%rip),%rax\n"
	"	movzbl (%rax,%rdi),%eax\n"
	"	ret\n"
	"1:	.byte 0x90,0xc3,0x22,0x33\n"
	".size rs_table, .-rs_table\n"
	/* a far return at +1: not a function's own way out */
	".globl rs_far\n.type rs_far,@function\nrs_far:\n"
	"	nop\n"
	"	lretq\n"
	".size rs_far, .-rs_far\n"
	/* a far call (2 bytes) returns like a call: its ret at +2 */
	".globl rs_farcall\n.type rs_farcall,@function\nrs_farcall:\n"
	"	lcall *(%rax)\n"
	"	ret\n"
	".size rs_farcall, .-rs_farcall\n"
	/* loop is a jump: the ret at +4 is reached only through it (ud2 before it) */
	".globl rs_loop\n.type rs_loop,@function\nrs_loop:\n"
	"	loop 1f\n"
	"	ud2\n"
	"1:	ret\n"
	".size rs_loop, .-rs_loop\n");

int main(void)
{
	return 0;
}
