/* SPDX-License-Identifier: MIT */
/*
 * The demo workload: a small "image pipeline" with a known call tree, built without frame
 * pointers so that only DWARF unwinding can recover its stacks.
 *
 *   main -> run_pipeline -> load_image -> checksum
 *                        -> blur_pass  -> blur_row -> pixel_average
 *                        -> encode     -> huffman_count
 *                                      -> write_output -> libc (qsort / memcpy)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define W 512
#define H 512
static uint8_t img[H][W], tmp[H][W];

__attribute__((noinline)) static uint32_t checksum(const uint8_t *p, size_t n)
{
	uint32_t a = 1, b = 0;
	for (size_t i = 0; i < n; i++) {
		a = (a + p[i]) % 65521;
		b = (b + a) % 65521;
	}
	return b << 16 | a;
}

__attribute__((noinline)) static uint32_t load_image(unsigned seed)
{
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++)
			img[y][x] = (uint8_t)((x * 31 + y * 17 + seed) ^ (x * y));
	return checksum(&img[0][0], sizeof(img));
}

__attribute__((noinline)) static uint8_t pixel_average(int y, int x)
{
	unsigned s = 0;
	for (int dy = -1; dy <= 1; dy++)
		for (int dx = -1; dx <= 1; dx++)
			s += img[(y + dy + H) % H][(x + dx + W) % W];
	return (uint8_t)(s / 9);
}

__attribute__((noinline)) static void blur_row(int y)
{
	for (int x = 0; x < W; x++)
		tmp[y][x] = pixel_average(y, x);
}

__attribute__((noinline)) static void blur_pass(void)
{
	for (int y = 0; y < H; y++)
		blur_row(y);
	memcpy(img, tmp, sizeof(img));
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

__attribute__((noinline)) static void huffman_count(uint32_t *freq)
{
	memset(freq, 0, 256 * sizeof(*freq));
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++)
			freq[img[y][x]]++;
}

__attribute__((noinline)) static uint32_t write_output(uint32_t *freq)
{
	static uint32_t big[1 << 16];
	for (unsigned i = 0; i < UINT32_C(1) << 16; i++)
		big[i] = freq[i & 255] * 2654435761u + i;
	qsort(big, 1 << 16, sizeof(big[0]), cmp_u32);
	return big[0] ^ big[(1 << 16) - 1];
}

__attribute__((noinline)) static uint32_t encode(void)
{
	uint32_t freq[256];
	huffman_count(freq);
	return write_output(freq);
}

__attribute__((noinline)) static uint32_t run_pipeline(unsigned round)
{
	uint32_t h = load_image(round);
	blur_pass();
	blur_pass();
	return h ^ encode();
}

int main(int argc, char **argv)
{
	unsigned rounds = argc > 1 ? (unsigned)atoi(argv[1]) : 40;
	uint32_t h = 0;
	for (unsigned r = 0; r < rounds; r++)
		h ^= run_pipeline(r);
	printf("demo: %u rounds, result %08x\n", rounds, h);
	return 0;
}
