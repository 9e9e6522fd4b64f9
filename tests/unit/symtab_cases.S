/* SPDX-License-Identifier: MIT */
/* Symbols with and without sizes for unit.test_symtab: a sized function, a function without a
 * size followed by another, and the last function, also without a size (as crt's _fini). */
	.text
	.globl	sized_fn
	.type	sized_fn, @function
sized_fn:
	nop
	nop
	nop
	ret
	.size	sized_fn, .-sized_fn

	.globl	zero_mid
	.type	zero_mid, @function
zero_mid:
	.fill	32, 1, 0x90

	.globl	zero_last
	.type	zero_last, @function
zero_last:
	.fill	64, 1, 0x90
	ret

	.section .note.GNU-stack,"",@progbits
