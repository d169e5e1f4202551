/* libsentinel-emu-mark.so: sentinel_emu_mark(tag) executes the slow-tier plugin's marker with tag & 0xff,
 * sentinel_emu_count_fast(on) the command marker 0xff01 (on) or 0xff00 (off) (emu_mark.h, docs/guest.md).
 * Python calls them with ctypes:
 *     ctypes.CDLL('build/tests/guest/libsentinel-emu-mark.so').sentinel_emu_mark(1)
 * The tag is part of the instruction's bytes, so there is one marker per tag: 256 stubs of 16 bytes, each
 * endbr64, the marker, ret; the function jumps to stub number tag. Without the plugin every stub is NOPs. */
#include "emu_mark.h"

__asm__(
    "  .text\n"
    "  .globl sentinel_emu_mark\n"
    "  .type sentinel_emu_mark, @function\n"
    "  .p2align 4\n"
    "sentinel_emu_mark:\n"
    "  endbr64\n"
    "  movzbl %dil, %eax\n"
    "  shll $4, %eax\n"
    "  leaq sentinel_emu_mark_stubs(%rip), %rdx\n"
    "  addq %rdx, %rax\n"
    "  jmp *%rax\n"
    "  .size sentinel_emu_mark, . - sentinel_emu_mark\n"
    "  .p2align 4\n"
    "sentinel_emu_mark_stubs:\n"
    "  .set sentinel_emu_mark_tag, 0\n"
    "  .rept 256\n"
    "  endbr64\n"
    "  .byte 0x66, 0x0f, 0x1f, 0x84, 0x00\n"
    "  .long 0x5e1c0000 + sentinel_emu_mark_tag\n"
    "  ret\n"
    "  .p2align 4, 0xcc\n"
    "  .set sentinel_emu_mark_tag, sentinel_emu_mark_tag + 1\n"
    "  .endr\n"
    "  .globl sentinel_emu_count_fast\n"
    "  .type sentinel_emu_count_fast, @function\n"
    "  .p2align 4\n"
    "sentinel_emu_count_fast:\n"
    "  endbr64\n"
    "  testl %edi, %edi\n"
    "  jnz 1f\n"
    "  .byte 0x66, 0x0f, 0x1f, 0x84, 0x00\n"
    "  .long 0x5e1cff00\n"
    "  ret\n"
    "1:\n"
    "  .byte 0x66, 0x0f, 0x1f, 0x84, 0x00\n"
    "  .long 0x5e1cff01\n"
    "  ret\n"
    "  .size sentinel_emu_count_fast, . - sentinel_emu_count_fast\n"
    "  .section .note.GNU-stack, \"\", @progbits\n"
    "  .text\n");
