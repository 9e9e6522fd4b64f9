/* CFI cases for test_cfi and test_unwind: each function exercises one kind of directive, and
 * global labels mark the pcs whose rows the tests assert. Assembled at test time. */
	.text

	.globl case_frame, case_frame_pushed, case_frame_body, case_frame_ret, case_frame_end
	.type case_frame, @function
case_frame:
	.cfi_startproc
	push %rbp
case_frame_pushed:
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	mov %rsp, %rbp
case_frame_body:
	.cfi_def_cfa_register %rbp
	nop
	nop
	pop %rbp
case_frame_ret:
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
case_frame_end:
	.size case_frame, .-case_frame

	.globl case_state, case_state_pushed, case_state_popped, case_state_restored
	.type case_state, @function
case_state:
	.cfi_startproc
	push %rbx
case_state_pushed:
	.cfi_def_cfa_offset 16
	.cfi_offset %rbx, -16
	test %rdi, %rdi
	je 1f
	.cfi_remember_state
	pop %rbx
case_state_popped:
	.cfi_def_cfa_offset 8
	.cfi_restore %rbx
	ret
1:
case_state_restored:
	.cfi_restore_state
	pop %rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size case_state, .-case_state

	/* A realigned stack with a DRAP register, as GCC writes it: CFA = *(rbp - 8), rbp saved at
	 * [rbp] (an expression from rbp itself); after `leave` rbp is the caller's again and the
	 * CFA is r10, but the rule for rbp stays */
	.globl case_drap, case_drap_body, case_drap_left
	.type case_drap, @function
case_drap:
	.cfi_startproc
	lea 8(%rsp), %r10
	.cfi_def_cfa %r10, 0
	and $-16, %rsp
	push -8(%r10)
	push %rbp
	mov %rsp, %rbp
	.cfi_escape 0x10, 0x06, 0x02, 0x76, 0x00
	push %r10
	.cfi_escape 0x0f, 0x03, 0x76, 0x78, 0x06
case_drap_body:
	nop
	mov -8(%rbp), %r10
	leave
case_drap_left:
	.cfi_def_cfa %r10, 0
	lea -8(%r10), %rsp
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size case_drap, .-case_drap

	/* CFA = *(rsp + 8): needs the DWARF expression evaluator */
	.globl case_expr
	.type case_expr, @function
case_expr:
	.cfi_startproc
	.cfi_escape 0x0f, 0x03, 0x77, 0x08, 0x06
	nop
	ret
	.cfi_endproc
	.size case_expr, .-case_expr

	/* outermost frame: return address undefined */
	.globl case_root
	.type case_root, @function
case_root:
	.cfi_startproc
	.cfi_undefined rip
	nop
	ret
	.cfi_endproc
	.size case_root, .-case_root

	/* a signal trampoline */
	.globl case_signal
	.type case_signal, @function
case_signal:
	.cfi_startproc
	.cfi_signal_frame
	nop
	ret
	.cfi_endproc
	.size case_signal, .-case_signal
	/* padding without CFI, as after glibc's __restore_rt */
	nop
	nop

	/* a large frame: 128 KiB of locals */
	.globl case_big, case_big_body
	.type case_big, @function
case_big:
	.cfi_startproc
	sub $0x20000, %rsp
case_big_body:
	.cfi_def_cfa_offset 0x20008
	add $0x20000, %rsp
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size case_big, .-case_big

	/* the return address popped into a register (glibc's __vfork): the caller's stack
	 * pointer equals this frame's */
	.globl case_vfork, case_vfork_popped
	.type case_vfork, @function
case_vfork:
	.cfi_startproc
	pop %rdi
	.cfi_adjust_cfa_offset -8
	.cfi_register %rip, %rdi
case_vfork_popped:
	nop
	push %rdi
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %rip, 0
	ret
	.cfi_endproc
	.size case_vfork, .-case_vfork

	/* code without any CFI */
	.globl case_nocfi
	.type case_nocfi, @function
case_nocfi:
	nop
	ret
	.size case_nocfi, .-case_nocfi
	.section .note.GNU-stack,"",@progbits
