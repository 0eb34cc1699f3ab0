/* A few AdamW steps of a small ResNet-20 (batch 4, 1x12x12, 10 classes)
 * from a seed, for tests that switch something that must not change the
 * numbers (a backend setting, a thread count) and compare the losses. */
#ifndef LT_TRAIN_SMALL_H
#define LT_TRAIN_SMALL_H

#include <stdint.h>

/* loss[steps]: each step's loss. 0, or -1 with the library's error set. */
int train_small_losses(uint64_t seed, int steps, float *loss);

#endif
