/* SPDX-License-Identifier: MIT */
/*
 * perf_event and perf.data constants, defined here rather than taken from the installed UAPI
 * headers, which may be older than the recordings we read (include/uapi/linux/perf_event.h,
 * tools/perf/util/header.h, tools/lib/perf/include/perf/event.h).
 */
#ifndef UW_PERF_FORMAT_H
#define UW_PERF_FORMAT_H

#include <stdint.h>

#define PERF_MAGIC1 0x454c494646524550ull /* "PERFFILE": the first format (no feature bitmap
                                            * when the header is 72 bytes) */
#define PERF_MAGIC2 0x32454c4946524550ull /* "PERFILE2" little-endian */
#define PERF_MAGIC2_SWAPPED 0x50455246494c4532ull

/* sample_type bits */
enum {
	PS_IP = 1 << 0, PS_TID = 1 << 1, PS_TIME = 1 << 2, PS_ADDR = 1 << 3, PS_READ = 1 << 4,
	PS_CALLCHAIN = 1 << 5, PS_ID = 1 << 6, PS_CPU = 1 << 7, PS_PERIOD = 1 << 8,
	PS_STREAM_ID = 1 << 9, PS_RAW = 1 << 10, PS_BRANCH_STACK = 1 << 11, PS_REGS_USER = 1 << 12,
	PS_STACK_USER = 1 << 13, PS_WEIGHT = 1 << 14, PS_DATA_SRC = 1 << 15, PS_IDENTIFIER = 1 << 16,
	PS_TRANSACTION = 1 << 17, PS_REGS_INTR = 1 << 18, PS_PHYS_ADDR = 1 << 19, PS_AUX = 1 << 20,
	PS_CGROUP = 1 << 21, PS_DATA_PAGE_SIZE = 1 << 22, PS_CODE_PAGE_SIZE = 1 << 23,
	PS_WEIGHT_STRUCT = 1 << 24,
};
#define PS_KNOWN ((1u << 25) - 1)

/* read_format */
enum { PF_TOTAL_TIME_ENABLED = 1, PF_TOTAL_TIME_RUNNING = 2, PF_ID = 4, PF_GROUP = 8, PF_LOST = 16 };

/* perf_event_attr flag bits (the bitfield word at offset 40) */
#define PA_SAMPLE_ID_ALL (1ull << 18)
#define PA_USE_CLOCKID (1ull << 25)
#define PA_BUILD_ID (1ull << 34)      /* MMAP2 records carry build-ids (PERF_RECORD_MISC_MMAP_BUILD_ID) */
#define PA_BRANCH_HW_INDEX_SAMPLE (1ull << 17) /* in branch_sample_type: PERF_SAMPLE_BRANCH_HW_INDEX */

/* record types */
enum {
	PR_MMAP = 1, PR_LOST = 2, PR_COMM = 3, PR_EXIT = 4, PR_THROTTLE = 5, PR_UNTHROTTLE = 6,
	PR_FORK = 7, PR_READ = 8, PR_SAMPLE = 9, PR_MMAP2 = 10, PR_AUX = 11, PR_ITRACE_START = 12,
	PR_LOST_SAMPLES = 13, PR_SWITCH = 14, PR_SWITCH_CPU_WIDE = 15, PR_NAMESPACES = 16,
	PR_KSYMBOL = 17, PR_BPF_EVENT = 18, PR_CGROUP = 19, PR_TEXT_POKE = 20,
	PR_AUX_OUTPUT_HW_ID = 21, PR_CALLCHAIN_DEFERRED = 22,
	/* user (perf tool) records */
	PR_HEADER_ATTR = 64, PR_HEADER_EVENT_TYPE = 65, PR_HEADER_TRACING_DATA = 66,
	PR_HEADER_BUILD_ID = 67, PR_FINISHED_ROUND = 68, PR_ID_INDEX = 69, PR_AUXTRACE_INFO = 70,
	PR_AUXTRACE = 71, PR_AUXTRACE_ERROR = 72, PR_THREAD_MAP = 73, PR_CPU_MAP = 74,
	PR_STAT_CONFIG = 75, PR_STAT = 76, PR_STAT_ROUND = 77, PR_EVENT_UPDATE = 78,
	PR_TIME_CONV = 79, PR_HEADER_FEATURE = 80, PR_COMPRESSED = 81, PR_FINISHED_INIT = 82,
	PR_COMPRESSED2 = 83, /* {header; u64 data_size; data, padded to 8 bytes} */
	PR_BPF_METADATA = 84, PR_SCHEDSTAT_CPU = 85, PR_SCHEDSTAT_DOMAIN = 86,
	PR_TYPES = 87,       /* record types named by perf_record_type_name */
};
/* Waits timed in the kernel and not walked (record --off-cpu with kernel unwinding): {header;
 * u64 key, ip, ns, n; the sample_id trailer of the off-CPU attribute}, pushed by the live
 * recorder into its reader for the writer (write/offcpu.c offcpu_add); a private type below the
 * kernel's range (as reader_attrs.h PR_UW_KUNW), never written. */
#define PR_UW_OFFCPU 61

/* header misc */
#define PM_CPUMODE_MASK 7
#define PM_KERNEL 1
#define PM_USER 2
#define PM_MMAP_DATA (1 << 13)
#define PM_COMM_EXEC (1 << 13)
#define PM_SWITCH_OUT (1 << 13)     /* SWITCH, SWITCH_CPU_WIDE: the task goes off the CPU */
#define PM_MMAP_BUILD_ID (1 << 14)
#define PM_LOST_SAMPLES_BPF (1 << 15) /* LOST_SAMPLES: dropped by a BPF filter */
#define PM_BUILD_ID_SIZE (1 << 15)

/* callchain context markers */
#define PC_HV ((uint64_t)-32)
#define PC_KERNEL ((uint64_t)-128)
#define PC_USER ((uint64_t)-512)
#define PC_GUEST ((uint64_t)-2048)
#define PC_GUEST_KERNEL ((uint64_t)-2176)
#define PC_GUEST_USER ((uint64_t)-2560)
#define PC_MAX ((uint64_t)-4095)

/* feature bits (tools/perf/util/header.h) */
enum {
	FEAT_TRACING_DATA = 1, FEAT_BUILD_ID = 2, FEAT_HOSTNAME = 3, FEAT_OSRELEASE = 4,
	FEAT_VERSION = 5, FEAT_ARCH = 6, FEAT_NRCPUS = 7, FEAT_CPUDESC = 8, FEAT_CPUID = 9,
	FEAT_TOTAL_MEM = 10, FEAT_CMDLINE = 11, FEAT_EVENT_DESC = 12, FEAT_CPU_TOPOLOGY = 13,
	FEAT_NUMA_TOPOLOGY = 14, FEAT_BRANCH_STACK = 15, FEAT_PMU_MAPPINGS = 16, FEAT_GROUP_DESC = 17,
	FEAT_AUXTRACE = 18, FEAT_STAT = 19, FEAT_CACHE = 20, FEAT_SAMPLE_TIME = 21,
	FEAT_MEM_TOPOLOGY = 22, FEAT_CLOCKID = 23, FEAT_DIR_FORMAT = 24, FEAT_BPF_PROG_INFO = 25,
	FEAT_BPF_BTF = 26, FEAT_COMPRESSED = 27, FEAT_CPU_PMU_CAPS = 28, FEAT_CLOCK_DATA = 29,
	FEAT_HYBRID_TOPOLOGY = 30, FEAT_PMU_CAPS = 31,
	FEAT_PERF_LAST = 32,    /* perf 6.1's HEADER_LAST_FEATURE: the end marker in pipe mode */
	/* Each sample's stop reason, as the unwinder that wrote its callchain found it (see
	 * perf_writer.c). perf skips feature bits it does not know (pr_debug "unknown feature"),
	 * so a high bit is ours. */
	FEAT_UW_STOPS = 250,
	FEAT_LAST = 256,
};
#define FEAT_COMPRESS_ZSTD 1 /* PERF_COMP_ZSTD in the COMPRESSED feature */

#define PERF_ATTR_SIZE_VER0 64

#endif
