// Nonblocking requests through the tracer's request table on 2 ranks under MPI_THREAD_MULTIPLE, each
// part with its own tag so trace_check can tell them apart:
//   tag 1: PAIRS Irecv+Issend pairs started on one thread and completed on another (Waitall, Wait, or a
//          Test loop, by turns), handed over through a queue;
//   tag 2: MANY receives and MANY sends pending at once, completed by one Waitall (more requests than
//          the lock-free front of the table holds, so many go to its overflow);
//   tag 3: REUSE rounds of an Isend released with MPI_Request_free and an Irecv completed by MPI_Wait,
//          so the next round's starts get the handles just freed or completed.
// Tags 1 and 2 send with MPI_Issend: Open MPI answers an MPI_Isend that completed at once with one
// shared, already complete request, whose handle cannot tell the sends apart.
// Exit 77 when the MPI library does not provide MPI_THREAD_MULTIPLE.
// With `serialized`, the same under MPI_THREAD_SERIALIZED: one mutex orders every MPI call of the two
// threads, as such a program must, and the tracer's request table takes no locked instruction.
//   mpi_requests PAIRS MANY REUSE [serialized]
#include <mpi.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace {

struct Handoff {  // one pair of requests, from the starting thread to the completing one
  MPI_Request reqs[2];
  std::atomic<bool> full{false};
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 && !(argc == 5 && std::strcmp(argv[4], "serialized") == 0)) {
    std::fprintf(stderr, "usage: mpi_requests PAIRS MANY REUSE [serialized]\n");
    return 2;
  }
  const int pairs = std::atoi(argv[1]), many = std::atoi(argv[2]), reuse = std::atoi(argv[3]);
  const bool serialized = argc == 5;
  const int level = serialized ? MPI_THREAD_SERIALIZED : MPI_THREAD_MULTIPLE;
  int provided = 0;
  MPI_Init_thread(&argc, &argv, level, &provided);
  if (provided < level) {
    std::fprintf(stderr, "mpi_requests: thread level %d not provided (%d)\n", level, provided);
    MPI_Finalize();
    return 77;
  }
  // Serialized: each MPI call of part 1's two threads under one lock.
  std::mutex mpi;
  auto call = [&](auto&& fn) {
    if (!serialized) return fn();
    std::lock_guard<std::mutex> lock(mpi);
    return fn();
  };
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int peer = (rank + 1) % size;
  int errors = 0;

  // Tag 1: started here, completed on the other thread.
  {
    constexpr int kDepth = 8;
    std::vector<Handoff> queue(kDepth);
    std::vector<int> out(static_cast<size_t>(pairs), 0), in(static_cast<size_t>(pairs), -1);
    std::atomic<int> wrong{0};
    std::thread completer([&] {
      for (int i = 0; i < pairs; ++i) {
        Handoff& h = queue[static_cast<size_t>(i % kDepth)];
        while (!h.full.load(std::memory_order_acquire)) std::this_thread::yield();
        switch (i % 3) {
          case 0:
            call([&] { return MPI_Waitall(2, h.reqs, MPI_STATUSES_IGNORE); });
            break;
          case 1:
            call([&] { return MPI_Wait(&h.reqs[0], MPI_STATUS_IGNORE); });
            call([&] { return MPI_Wait(&h.reqs[1], MPI_STATUS_IGNORE); });
            break;
          default:
            for (MPI_Request& r : h.reqs) {
              int flag = 0;
              while (!flag) call([&] { return MPI_Test(&r, &flag, MPI_STATUS_IGNORE); });
            }
        }
        if (in[static_cast<size_t>(i)] != i) wrong.fetch_add(1);
        h.full.store(false, std::memory_order_release);
      }
    });
    for (int i = 0; i < pairs; ++i) {
      Handoff& h = queue[static_cast<size_t>(i % kDepth)];
      while (h.full.load(std::memory_order_acquire)) std::this_thread::yield();
      out[static_cast<size_t>(i)] = i;
      call([&] {
        return MPI_Irecv(&in[static_cast<size_t>(i)], 1, MPI_INT, peer, 1, MPI_COMM_WORLD, &h.reqs[0]);
      });
      call([&] {
        return MPI_Issend(&out[static_cast<size_t>(i)], 1, MPI_INT, peer, 1, MPI_COMM_WORLD, &h.reqs[1]);
      });
      h.full.store(true, std::memory_order_release);
    }
    completer.join();
    errors += wrong.load();
  }

  // Tag 2: a Waitall over more requests than the front holds.
  {
    std::vector<MPI_Request> reqs(2 * static_cast<size_t>(many));
    std::vector<int> out(static_cast<size_t>(many)), in(static_cast<size_t>(many), -1);
    for (int i = 0; i < many; ++i) {
      out[static_cast<size_t>(i)] = i;
      MPI_Irecv(&in[static_cast<size_t>(i)], 1, MPI_INT, peer, 2, MPI_COMM_WORLD,
                &reqs[static_cast<size_t>(i)]);
    }
    for (int i = 0; i < many; ++i)
      MPI_Issend(&out[static_cast<size_t>(i)], 1, MPI_INT, peer, 2, MPI_COMM_WORLD,
                 &reqs[static_cast<size_t>(many) + static_cast<size_t>(i)]);
    MPI_Waitall(2 * many, reqs.data(), MPI_STATUSES_IGNORE);
    for (int i = 0; i < many; ++i) errors += in[static_cast<size_t>(i)] != i;
  }

  // Tag 3: handles freed or completed, then handed out again.
  {
    std::vector<int> out(static_cast<size_t>(reuse)), in(static_cast<size_t>(reuse), -1);
    for (int i = 0; i < reuse; ++i) {
      MPI_Request send, recv;
      out[static_cast<size_t>(i)] = i;
      MPI_Isend(&out[static_cast<size_t>(i)], 1, MPI_INT, peer, 3, MPI_COMM_WORLD, &send);
      MPI_Request_free(&send);
      MPI_Irecv(&in[static_cast<size_t>(i)], 1, MPI_INT, peer, 3, MPI_COMM_WORLD, &recv);
      MPI_Wait(&recv, MPI_STATUS_IGNORE);
      errors += in[static_cast<size_t>(i)] != i;
    }
    MPI_Barrier(MPI_COMM_WORLD);  // the freed sends have been received
  }

  MPI_Finalize();
  if (errors) std::fprintf(stderr, "mpi_requests: %d wrong values\n", errors);
  return errors ? 1 : 0;
}
