/* The slow-tier plugin's marker (docs/guest.md, "Counts, the marker and emulated time"): a 9-byte NOP,
 *     66 0f 1f 84 00 TT TT 1c 5e        nopw 0x5e1cTTTT(%rax,%rax,1)
 * that the plugin recognises when it translates it. Each execution appends one record of the counts since
 * the previous marker to the plugin's counts file. On any other machine it is an ordinary NOP. */
#ifndef SENTINEL_EMU_MARK_H
#define SENTINEL_EMU_MARK_H

/* Tags 0xff00 and 0xff01 are commands as well as records: the plugin stops, and starts, counting node 0's
 * line misses (it slows node 0's emulation, so the plugin counts only node 1's unless asked). */
#define SENTINEL_EMU_FAST_OFF 0xff00
#define SENTINEL_EMU_FAST_ON 0xff01
/* Tags 0xfe00-0xfe0f are libsentinel.so's own (SENTINEL_TRIAL_CLOCK=emulated: src/base/emu_clock.h). */

/* A marker with a constant tag (0-65535), inline: no call, no register touched. */
#define SENTINEL_EMU_MARK(tag) \
  __asm__ volatile(".byte 0x66, 0x0f, 0x1f, 0x84, 0x00\n\t.long 0x5e1c0000 + %c0" : : "i"((tag)&0xffff) : "memory")

#ifdef __cplusplus
extern "C" {
#endif
/* A marker with a tag known only at run time: tag & 0xff (libsentinel-emu-mark.so, emu_mark.c). */
void sentinel_emu_mark(unsigned tag);
/* The command markers: node 0's line misses counted from here on (on != 0), or no longer (on == 0). */
void sentinel_emu_count_fast(int on);
#ifdef __cplusplus
}
#endif

#endif
