// 8 threads (or NTHREADS) per rank issuing collectives at once under MPI_THREAD_MULTIPLE, each on its
// own communicator (a duplicate, made by the thread, of a duplicate of MPI_COMM_WORLD); call i of thread k
// has count k * 1000 + i, so trace_check can tell every call apart. Exit 77 when the MPI library does not
// provide MPI_THREAD_MULTIPLE. Where the process may run on several CPUs, each thread moves to another
// of them every few calls, so that its calls are stamped on different CPUs (the tracer's per-CPU clock
// anchors, docs/tracer.md).
//   mpi_threads NTHREADS CALLS
#include <mpi.h>
#include <pthread.h>
#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: mpi_threads NTHREADS CALLS\n");
    return 2;
  }
  int nthreads = std::atoi(argv[1]), calls = std::atoi(argv[2]);
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  if (provided < MPI_THREAD_MULTIPLE) {
    std::fprintf(stderr, "mpi_threads: MPI_THREAD_MULTIPLE not provided (%d)\n", provided);
    MPI_Finalize();
    return 77;
  }
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  std::vector<MPI_Comm> comms(static_cast<size_t>(nthreads));
  for (auto& c : comms) MPI_Comm_dup(MPI_COMM_WORLD, &c);
  std::vector<std::thread> pool;
  std::vector<int> bad(static_cast<size_t>(nthreads), 0);
  for (int k = 0; k < nthreads; ++k) {
    pool.emplace_back([&, k] {
      // Each thread creates its working communicator itself, while the others already make
      // collectives: communicator registration races lookups on other threads.
      MPI_Comm c;
      MPI_Comm_dup(comms[static_cast<size_t>(k)], &c);
      std::vector<int> in(static_cast<size_t>(nthreads) * 1000 + static_cast<size_t>(calls), 1),
          out(in.size(), 0);
      int size;
      MPI_Comm_size(c, &size);
      for (int i = 0; i < calls; ++i) {
        if (cpus.size() > 1 && i % 5 == 0) {
          cpu_set_t one;
          CPU_ZERO(&one);
          CPU_SET(cpus[static_cast<size_t>(i / 5 + k) % cpus.size()], &one);
          pthread_setaffinity_np(pthread_self(), sizeof one, &one);
        }
        int count = k * 1000 + i;
        switch (i % 3) {
          case 0:
            MPI_Allreduce(in.data(), out.data(), count, MPI_INT, MPI_SUM, c);
            if (count > 0 && out[0] != size) ++bad[static_cast<size_t>(k)];
            break;
          case 1:
            MPI_Bcast(in.data(), count, MPI_INT, i % size, c);
            break;
          default: {
            MPI_Request req;
            MPI_Iallreduce(in.data(), out.data(), count, MPI_INT, MPI_MAX, c, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            break;
          }
        }
      }
      MPI_Comm_free(&c);
    });
  }
  for (auto& t : pool) t.join();
  int errors = 0;
  for (int b : bad) errors += b;
  for (auto& c : comms) MPI_Comm_free(&c);
  MPI_Finalize();
  if (errors) std::fprintf(stderr, "mpi_threads: %d wrong results\n", errors);
  return errors ? 1 : 0;
}
