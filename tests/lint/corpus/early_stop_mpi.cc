// Early stopping decided on one rank's own metric.
#include <mpi.h>

float evaluate(const float* weights, int n);
float validate(const float* weights, const float* local_val_set, int n);
void train_step(float* weights, int n);

void fit_buggy(float* weights, const float* val_set, int n, int epochs) {
  for (int epoch = 0; epoch < epochs; ++epoch) {
    train_step(weights, n);
    MPI_Allreduce(MPI_IN_PLACE, weights, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: collective 'MPI_Allreduce' is skipped by ranks that leave early [conditional-collective]
    // CHECK-NOTES: :[[@LINE+2]]:9: note: early exit decided here
    float loss = validate(weights, val_set, n);
    if (loss < 0.01f) break;
  }
}

// Correct: the stopping metric is reduced first, so every rank stops at the same epoch.
void fit_fixed(float* weights, const float* val_set, int n, int epochs) {
  for (int epoch = 0; epoch < epochs; ++epoch) {
    train_step(weights, n);
    MPI_Allreduce(MPI_IN_PLACE, weights, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    float loss = validate(weights, val_set, n);
    float mean_loss = 0;
    MPI_Allreduce(&loss, &mean_loss, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    if (mean_loss < 0.01f) break;
  }
}

// Buggy: a while loop on the local loss.
void converge_buggy(float* weights, int n) {
  float loss = evaluate(weights, n);
  while (loss > 0.5f) {
    MPI_Barrier(MPI_COMM_WORLD);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: collective 'MPI_Barrier' runs once per loop iteration [conditional-collective]
    train_step(weights, n);
    loss = evaluate(weights, n);
  }
}
