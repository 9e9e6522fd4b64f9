# In-kernel unwinding (lib/kernel, docs/kernel-unwind.md): the eBPF program is compiled with
# clang's BPF target against the kernel's BTF (vmlinux.h, generated here by bpftool from
# UW_VMLINUX_BTF), embedded in a skeleton (bpftool gen skeleton) and loaded with libbpf.
# With all of them present UW_HAVE_KERNEL_UNWIND is defined for every target; without, the
# program is compiled out and the reason is said once at configure time.
#
# Always built into the library: the table conversion and record decoding (plain C); with
# UW_HAVE_KERNEL_UNWIND also the loader, which loads libbpf.so.1 when first used (kunw_load.c).

set(UW_VMLINUX_BTF /sys/kernel/btf/vmlinux CACHE FILEPATH "The kernel BTF the BPF program is compiled against")
set(UW_HAVE_KERNEL_UNWIND OFF)
set(UW_KUNW_INCLUDES "")
set(UW_KUNW_MISSING "")
if(UW_KERNEL_UNWIND)
  pkg_check_modules(LIBBPF IMPORTED_TARGET libbpf>=1.0)
  find_program(UW_BPF_CLANG NAMES clang clang-19 clang-18 clang-17 clang-16 clang-15 clang-14)
  find_program(UW_BPFTOOL NAMES bpftool PATHS /usr/sbin /sbin)
  find_program(UW_LLVM_STRIP NAMES llvm-strip llvm-strip-19 llvm-strip-18 llvm-strip-17 llvm-strip-16
               llvm-strip-15 llvm-strip-14)
  if(NOT LIBBPF_FOUND)
    list(APPEND UW_KUNW_MISSING "libbpf >= 1.0 (libbpf-dev)")
  endif()
  if(UW_BPF_CLANG)
    execute_process(COMMAND ${UW_BPF_CLANG} -print-targets OUTPUT_VARIABLE uw_clang_targets ERROR_QUIET)
    if(NOT uw_clang_targets MATCHES "bpf")
      list(APPEND UW_KUNW_MISSING "clang's BPF target")
    endif()
  else()
    list(APPEND UW_KUNW_MISSING "clang")
  endif()
  if(NOT UW_BPFTOOL)
    list(APPEND UW_KUNW_MISSING "bpftool")
  endif()
  if(NOT EXISTS ${UW_VMLINUX_BTF})
    list(APPEND UW_KUNW_MISSING "the kernel's BTF (${UW_VMLINUX_BTF})")
  endif()
  if(NOT CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
    list(APPEND UW_KUNW_MISSING "x86_64 (the unwinder's architecture)")
  endif()
  if(UW_KUNW_MISSING)
    string(REPLACE ";" ", " uw_missing "${UW_KUNW_MISSING}")
    message(STATUS "Kernel unwinding: compiled out (missing ${uw_missing}; scripts/install-deps build installs them)")
  else()
    set(UW_HAVE_KERNEL_UNWIND ON)
    message(STATUS "Kernel unwinding: on (${UW_BPF_CLANG}, ${UW_BPFTOOL}, libbpf ${LIBBPF_VERSION})")
  endif()
else()
  message(STATUS "Kernel unwinding: off (UW_KERNEL_UNWIND=OFF)")
endif()

set(UW_KUNW_SOURCES lib/kernel/kunw_table.c lib/kernel/kunw_record.c lib/kernel/kunw_cache.c)
if(UW_HAVE_KERNEL_UNWIND)
  add_compile_definitions(UW_HAVE_KERNEL_UNWIND=1)
  # libbpf's headers only: the library loads libbpf.so.1 when kernel unwinding is first used
  # (kunw_load.c), so neither it nor a program linking it needs libbpf to start
  set(UW_KUNW_INCLUDES ${LIBBPF_INCLUDE_DIRS})
  set(gen ${CMAKE_CURRENT_BINARY_DIR}/gen/kernel)
  set(UW_KUNW_GEN ${gen})
  set(src ${CMAKE_CURRENT_SOURCE_DIR}/lib/kernel)
  add_custom_command(OUTPUT ${gen}/vmlinux.h
    COMMAND ${CMAKE_COMMAND} -E make_directory ${gen}
    COMMAND ${UW_BPFTOOL} btf dump file ${UW_VMLINUX_BTF} format c > ${gen}/vmlinux.h.tmp
    COMMAND ${CMAKE_COMMAND} -E rename ${gen}/vmlinux.h.tmp ${gen}/vmlinux.h
    COMMENT "Generating vmlinux.h from ${UW_VMLINUX_BTF}" VERBATIM)
  # -mcpu=v3: 32-bit ALU operations, whose bounds the verifier tracks (Linux 5.1; the program
  # needs 5.17 anyway); DWARF is stripped from the object, BTF kept (CO-RE needs it)
  set(strip_cmd "")
  if(UW_LLVM_STRIP)
    set(strip_cmd COMMAND ${UW_LLVM_STRIP} -g ${gen}/kunw.bpf.o)
  endif()
  add_custom_command(OUTPUT ${gen}/kunw.bpf.o
    COMMAND ${UW_BPF_CLANG} -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_x86 -Wall -Wextra -Werror
            -I${gen} -I${src} -c ${src}/kunw.bpf.c -o ${gen}/kunw.bpf.o
    ${strip_cmd}
    DEPENDS ${src}/kunw.bpf.c ${src}/kunw_wait.bpf.h ${src}/kunw_abi.h ${gen}/vmlinux.h
    COMMENT "Compiling the BPF program kunw.bpf.c" VERBATIM)
  add_custom_command(OUTPUT ${gen}/kunw.skel.h
    COMMAND ${UW_BPFTOOL} gen skeleton ${gen}/kunw.bpf.o name kunw_bpf > ${gen}/kunw.skel.h.tmp
    COMMAND ${CMAKE_COMMAND} -E rename ${gen}/kunw.skel.h.tmp ${gen}/kunw.skel.h
    DEPENDS ${gen}/kunw.bpf.o
    COMMENT "Generating the BPF skeleton kunw.skel.h" VERBATIM)
  list(APPEND UW_KUNW_SOURCES lib/kernel/kunw_load.c ${gen}/kunw.skel.h)
endif()

# The layer is part of the library (unwound record uses it); unwound_kernel names it for the
# tests that reach its internals.
add_library(unwound_kernel INTERFACE)
target_include_directories(unwound_kernel INTERFACE ${CMAKE_CURRENT_SOURCE_DIR}/lib)
target_link_libraries(unwound_kernel INTERFACE unwound_internal)
