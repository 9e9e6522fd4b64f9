/* SPDX-License-Identifier: MIT */
/*
 * A stack nothing can read (tests/e2e/nostack.sh): `nostack ITERATIONS` spins ITERATIONS times in
 * nostack_spin with its stack pointer on a page never touched, as a new thread's first instants
 * are before its stack is faulted in. Neither the kernel's stack copy nor a walk in the kernel
 * can read a byte there (they do not fault pages in): all a sample has is its registers, whose
 * pc is the frame perf reports.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

void nostack_spin(unsigned long n, void *sp);
/* rdi iterations, rsi the stack top to run on; the old stack pointer kept in rax */
__asm__(".text\n"
	".globl nostack_spin\n"
	".type nostack_spin, @function\n"
	"nostack_spin:\n"
	".cfi_startproc\n"
	"\tmov %rsp, %rax\n"
	"\tmov %rsi, %rsp\n"
	"1:\tdec %rdi\n"
	"\tjnz 1b\n"
	"\tmov %rax, %rsp\n"
	"\tret\n"
	".cfi_endproc\n"
	".size nostack_spin, .-nostack_spin\n");

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 0) : 1000000000ul;
	size_t len = 1 << 20;
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	nostack_spin(n, m + len / 2);
	printf("done %lu\n", n);
	return 0;
}
