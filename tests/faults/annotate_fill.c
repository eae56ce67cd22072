/* Fault probe: a program that is not an MPI job and only annotates, as an application using the
 * annotation API would. annotate_fill COUNT SIZE REPEAT: COUNT annotations of SIZE distinct bytes each,
 * then REPEAT more with one short text (records only, no new strings). Prints a checksum of its own
 * work so that its output can be compared with and without the tracer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lockstep/annotate.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: annotate_fill COUNT SIZE REPEAT\n");
    return 2;
  }
  long count = atol(argv[1]), size = atol(argv[2]), repeat = atol(argv[3]);
  if (size < 16) size = 16;
  char* text = malloc((size_t)size + 1);
  if (!text) return 3;
  unsigned long sum = 0;
  for (long i = 0; i < count; ++i) {
    memset(text, 'a' + (int)(i % 26), (size_t)size);
    snprintf(text, 16, "step %ld", i);
    text[strlen(text)] = ' ';
    text[size] = '\0';
    if (lockstep_annotate) lockstep_annotate(text);
    sum += (unsigned long)i * 2654435761u;
  }
  for (long i = 0; i < repeat; ++i) {
    if (lockstep_annotate) lockstep_annotate("tick");
    sum ^= (unsigned long)i;
  }
  printf("annotate_fill: %ld annotations of %ld bytes, %ld ticks, sum %lu\n", count, size, repeat, sum);
  free(text);
  return 0;
}
