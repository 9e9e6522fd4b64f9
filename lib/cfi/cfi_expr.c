/* SPDX-License-Identifier: MIT */
/*
 * DWARF expression evaluation for CFI rules (DWARF 5 §2.5.1). Only the operations that are
 * meaningful in call frame information are accepted (no DW_OP_addr relocation, no piece
 * composition). Steps and stack depth are bounded, so hostile expressions terminate.
 */
#include <errno.h>

#include "cfi/cfi.h"

#define EXPR_STACK 64
#define EXPR_MAX_STEPS 4096

int cfi_expr_eval(const struct cfi_expr_ctx *x, const uint8_t *expr, size_t len, bool push_initial,
                  uint64_t initial, uint64_t *out)
{
	uint64_t st[EXPR_STACK];
	unsigned sp = 0;
	struct base_cursor c = base_cursor(expr, len);
#define PUSH(v)                                  \
	do {                                     \
		uint64_t pv_ = (v);              \
		if (sp >= EXPR_STACK)            \
			return -UW_EFORMAT;      \
		st[sp++] = pv_;                  \
	} while (0)
#define NEED(n)                                  \
	do {                                     \
		if (sp < (n))                    \
			return -UW_EFORMAT;      \
	} while (0)
	if (push_initial)
		PUSH(initial);
	for (unsigned steps = 0; base_cur_left(&c) > 0; steps++) {
		if (steps >= EXPR_MAX_STEPS)
			return -UW_EFORMAT;
		uint8_t op = base_cur_u8(&c);
		uint64_t a, b, v;
		if (op >= 0x30 && op <= 0x4f) { /* lit0..lit31 */
			PUSH((uint64_t)(op - 0x30));
			continue;
		}
		if (op >= 0x70 && op <= 0x8f) { /* breg0..breg31 */
			int64_t off = base_cur_sleb(&c);
			if (c.bad || !x->reg(x->ctx, op - 0x70u, &v))
				return -UW_EFORMAT;
			PUSH(v + (uint64_t)off);
			continue;
		}
		if (op >= 0x50 && op <= 0x6f) { /* reg0..reg31: value in register (val_expression) */
			if (!x->reg(x->ctx, op - 0x50u, &v))
				return -UW_EFORMAT;
			PUSH(v);
			continue;
		}
		switch (op) {
		case 0x03: /* addr: an unrelocated address means nothing at run time */
			return -UW_EUNSUPP;
		case 0x06: /* deref */
			NEED(1);
			if (!x->mem(x->ctx, st[sp - 1], &v, 8))
				return -EFAULT;
			st[sp - 1] = v;
			break;
		case 0x94: { /* deref_size */
			uint8_t n = base_cur_u8(&c);
			NEED(1);
			if (n == 0 || n > 8)
				return -UW_EFORMAT;
			v = 0;
			if (!x->mem(x->ctx, st[sp - 1], &v, n))
				return -EFAULT;
			st[sp - 1] = v;
			break;
		}
		case 0x08: PUSH(base_cur_u8(&c)); break;
		case 0x09: PUSH((uint64_t)(int64_t)base_cur_s8(&c)); break;
		case 0x0a: PUSH(base_cur_u16(&c)); break;
		case 0x0b: PUSH((uint64_t)(int64_t)base_cur_s16(&c)); break;
		case 0x0c: PUSH(base_cur_u32(&c)); break;
		case 0x0d: PUSH((uint64_t)(int64_t)base_cur_s32(&c)); break;
		case 0x0e: PUSH(base_cur_u64(&c)); break;
		case 0x0f: PUSH((uint64_t)base_cur_s64(&c)); break;
		case 0x10: PUSH(base_cur_uleb(&c)); break;
		case 0x11: PUSH((uint64_t)base_cur_sleb(&c)); break;
		case 0x12: NEED(1); PUSH(st[sp - 1]); break;            /* dup */
		case 0x13: NEED(1); sp--; break;                        /* drop */
		case 0x14: NEED(2); PUSH(st[sp - 2]); break;            /* over */
		case 0x15: {                                            /* pick */
			uint8_t i = base_cur_u8(&c);
			NEED((unsigned)i + 1);
			PUSH(st[sp - 1 - i]);
			break;
		}
		case 0x16: NEED(2); v = st[sp - 1]; st[sp - 1] = st[sp - 2]; st[sp - 2] = v; break;
		case 0x17: /* rot */
			NEED(3);
			v = st[sp - 1];
			st[sp - 1] = st[sp - 2];
			st[sp - 2] = st[sp - 3];
			st[sp - 3] = v;
			break;
		case 0x19: NEED(1); if ((int64_t)st[sp - 1] < 0) st[sp - 1] = -st[sp - 1]; break;
		case 0x1f: NEED(1); st[sp - 1] = -st[sp - 1]; break;    /* neg */
		case 0x20: NEED(1); st[sp - 1] = ~st[sp - 1]; break;    /* not */
		case 0x23: NEED(1); st[sp - 1] += base_cur_uleb(&c); break; /* plus_uconst */
		case 0x1a: case 0x1b: case 0x1c: case 0x1d: case 0x1e: case 0x21: case 0x22:
		case 0x24: case 0x25: case 0x26: case 0x27:
		case 0x29: case 0x2a: case 0x2b: case 0x2c: case 0x2d: case 0x2e:
			NEED(2);
			b = st[--sp];
			a = st[sp - 1];
			switch (op) {
			case 0x1a: v = a & b; break;
			case 0x1b: /* div (signed) */
				if (b == 0 || ((int64_t)a == INT64_MIN && (int64_t)b == -1))
					return -UW_EFORMAT;
				v = (uint64_t)((int64_t)a / (int64_t)b);
				break;
			case 0x1c: v = a - b; break;
			case 0x1d: if (b == 0) return -UW_EFORMAT; v = a % b; break;
			case 0x1e: v = a * b; break;
			case 0x21: v = a | b; break;
			case 0x22: v = a + b; break;
			case 0x24: v = b >= 64 ? 0 : a << b; break;
			case 0x25: v = b >= 64 ? 0 : a >> b; break;
			case 0x26: v = (uint64_t)((int64_t)a >> (b >= 63 ? 63 : b)); break;
			case 0x27: v = a ^ b; break;
			case 0x29: v = a == b; break;
			case 0x2a: v = (int64_t)a >= (int64_t)b; break;
			case 0x2b: v = (int64_t)a > (int64_t)b; break;
			case 0x2c: v = (int64_t)a <= (int64_t)b; break;
			case 0x2d: v = (int64_t)a < (int64_t)b; break;
			default: v = a != b; break;
			}
			st[sp - 1] = v;
			break;
		case 0x2f: { /* skip */
			int16_t d = base_cur_s16(&c);
			if (c.bad)
				return -UW_EFORMAT;
			ptrdiff_t pos = (c.p - expr) + d;
			if (pos < 0 || (size_t)pos > len)
				return -UW_EFORMAT;
			c.p = expr + pos;
			break;
		}
		case 0x28: { /* bra */
			int16_t d = base_cur_s16(&c);
			NEED(1);
			if (c.bad)
				return -UW_EFORMAT;
			if (st[--sp] != 0) {
				ptrdiff_t pos = (c.p - expr) + d;
				if (pos < 0 || (size_t)pos > len)
					return -UW_EFORMAT;
				c.p = expr + pos;
			}
			break;
		}
		case 0x90: /* regx */
			if (!x->reg(x->ctx, (unsigned)base_cur_uleb(&c), &v))
				return -UW_EFORMAT;
			PUSH(v);
			break;
		case 0x92: { /* bregx */
			uint64_t r = base_cur_uleb(&c);
			int64_t off = base_cur_sleb(&c);
			if (c.bad || r > 0xffff || !x->reg(x->ctx, (unsigned)r, &v))
				return -UW_EFORMAT;
			PUSH(v + (uint64_t)off);
			break;
		}
		case 0x96: break; /* nop */
		default:
			return -UW_EUNSUPP;
		}
		if (c.bad)
			return -UW_EFORMAT;
	}
	if (c.bad || sp == 0)
		return -UW_EFORMAT;
	*out = st[sp - 1];
	return 0;
#undef PUSH
#undef NEED
}
