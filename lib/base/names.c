/* SPDX-License-Identifier: MIT */
/* The library's names for its values (stop reasons, frame methods) and its version. */
#include "unwound/unwound.h"

#include "base/compiler.h"

UW_API const char *uw_stop_reason_str(enum uw_stop_reason r)
{
	static const char *const names[] = {
#define UW_STOP_STR(name, msg) msg,
		UW_STOP_REASONS(UW_STOP_STR)
#undef UW_STOP_STR
	};
	return (unsigned)r < UW_ARRAY_SIZE(names) ? names[r] : "unknown";
}

UW_API const char *uw_frame_method_str(enum uw_frame_method m)
{
	static const char *const names[] = {
		[UW_METHOD_REGS] = "registers", [UW_METHOD_CFI] = "CFI", [UW_METHOD_FP] = "frame pointer",
		[UW_METHOD_PLT] = "PLT rule", [UW_METHOD_SIGNAL] = "signal frame", [UW_METHOD_CALLCHAIN] = "callchain",
		[UW_METHOD_SFRAME] = "SFrame", [UW_METHOD_STITCHED] = "stitched",
		[UW_METHOD_BPF_ROWS] = "BPF rows", [UW_METHOD_BPF_FP] = "BPF frame pointer",
	};
	return (unsigned)m < UW_ARRAY_SIZE(names) && names[m] ? names[m] : "unknown";
}

UW_API unsigned uw_version(void)
{
	return UW_VERSION_NUMBER;
}

#define UW_STR2(x) #x
#define UW_STR(x) UW_STR2(x)
UW_API const char *uw_version_string(void)
{
	return UW_STR(UW_VERSION_MAJOR) "." UW_STR(UW_VERSION_MINOR) "." UW_STR(UW_VERSION_PATCH);
}
