/* One buffer, many texts: the tracer remembers the texts a thread interned by their address, so each
 * text written into the same buffer must still be recorded as itself, whether it is shorter, longer or
 * as long as the one before, and however long (tests/tracer/reused_text.sh). Prints each text it
 * annotates, one per line, for the test to compare with the trace.
 *   reused_text ROUNDS */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lockstep/annotate.h"

static const char* const kTexts[] = {
    "step",
    "steps",
    "ste",
    "step",
    "stop",
    "DistributedGradientTape_Allreduce/cond_1/HorovodAllreduce_grads_1_0",
    "DistributedGradientTape_Allreduce/cond_1/HorovodAllreduce_grads_1_1",
    "DistributedGradientTape_Allreduce/cond_1/HorovodAllreduce_grads_1_0",
    "DistributedGradientTape_Allreduce/cond_1/HorovodAllreduce_grads_1",
    "DistributedGradientTape_Allreduce/cond_1/HorovodAllreduce_grads_1_0/and_a_longer_tail_past_it",
    "step",
    "x",
    "y",
    "0123456",
    "01234567",
    "012345678",
    "01234568",
};

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 2;
  static char buf[256];
  for (int r = 0; r < rounds; ++r)
    for (size_t i = 0; i < sizeof kTexts / sizeof kTexts[0]; ++i) {
      strcpy(buf, kTexts[i]);
      if (lockstep_annotate) lockstep_annotate(buf);
      /* The same text from a second buffer: another address, the same string. */
      char other[256];
      strcpy(other, kTexts[i]);
      if (lockstep_annotate) lockstep_annotate(other);
      printf("%s\n%s\n", kTexts[i], kTexts[i]);
    }
  return 0;
}
