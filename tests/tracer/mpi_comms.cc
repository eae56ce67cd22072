// Communicator identity across ranks: a 4-rank program that creates communicators in every way the
// tracer names (dup and free in a loop so handles are reused, split, split_type, create, create_group,
// intercomm create and merge, cart, idup, and one made by an unwrapped call after MPI_Comm_disconnect)
// and makes one collective on each. Each rank writes, per
// collective, a label naming the communicator as the program means it ("split-1": the split of colour
// 1) to EXPECTED_DIR/rank-<r>.txt; trace_check comms asserts one id per label across ranks and
// different ids for different labels, without extra communication in the tracer.
//   mpi_comms EXPECTED_DIR
#include <mpi.h>

#include <cstdio>
#include <map>
#include <string>

namespace {
std::FILE* g_out;
std::map<std::string, int> g_seq;

void use(MPI_Comm c, const std::string& label) {
  int x = 1, y = 0;
  std::fprintf(g_out, "%s %d\n", label.c_str(), g_seq[label]++);
  MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, c);
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 4) MPI_Abort(MPI_COMM_WORLD, 2);
  char path[4096];
  std::snprintf(path, sizeof path, "%s/rank-%d.txt", argv[1], rank);
  g_out = std::fopen(path, "w");
  if (!g_out) MPI_Abort(MPI_COMM_WORLD, 2);

  use(MPI_COMM_WORLD, "world");
  // The same handle comes back after each free: five communicators all the same.
  for (int i = 0; i < 5; ++i) {
    MPI_Comm d;
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    use(d, "dup" + std::to_string(i));
    use(d, "dup" + std::to_string(i));
    MPI_Comm_free(&d);
  }
  MPI_Comm half;  // {0,1} and {2,3}
  MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &half);
  use(half, "split-" + std::to_string(rank / 2));

  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  use(node, "shared");

  MPI_Group world_group, even_group, odd_group;
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  const int evens[] = {0, 2}, odds[] = {1, 3};
  MPI_Group_incl(world_group, 2, evens, &even_group);
  MPI_Group_incl(world_group, 2, odds, &odd_group);
  MPI_Comm even = MPI_COMM_NULL;
  MPI_Comm_create(MPI_COMM_WORLD, even_group, &even);  // collective over world; odd ranks get NULL
  if (even != MPI_COMM_NULL) use(even, "create-even");
  MPI_Comm odd = MPI_COMM_NULL;
  if (rank % 2 == 1) {  // collective over the group's members only
    MPI_Comm_create_group(MPI_COMM_WORLD, odd_group, 7, &odd);
    use(odd, "create-group-odd");
  }

  MPI_Comm inter, merged;
  MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank < 2 ? 2 : 0, 99, &inter);
  use(inter, "inter");
  MPI_Intercomm_merge(inter, rank >= 2, &merged);
  use(merged, "merged");

  MPI_Comm cart;
  int dims[1] = {4}, periods[1] = {1};
  MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart);
  use(cart, "cart");

  MPI_Comm idup;
  MPI_Request req;
  MPI_Comm_idup(MPI_COMM_WORLD, &idup, &req);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  use(idup, "idup");
  // A dup of the split: same parent kind as the loop above, other parent, other id.
  MPI_Comm half_dup;
  MPI_Comm_dup(half, &half_dup);
  use(half_dup, "split-dup-" + std::to_string(rank / 2));

  // A communicator made by a call the tracer does not wrap (MPI_Cart_sub: named by its members at its
  // first use), right after MPI_Comm_disconnect ended another: MPI hands the freed handle out again, and
  // the new communicator must not be taken for the ended one.
  MPI_Comm grid, gone, row;
  int dims2[2] = {2, 2}, periods2[2] = {0, 0}, keep[2] = {0, 1};
  MPI_Cart_create(MPI_COMM_WORLD, 2, dims2, periods2, 0, &grid);
  MPI_Comm_dup(MPI_COMM_WORLD, &gone);
  use(gone, "disconnected");
  MPI_Comm_disconnect(&gone);
  MPI_Cart_sub(grid, keep, &row);  // {0,1} and {2,3}
  use(row, "row-" + std::to_string(rank / 2));

  std::fclose(g_out);
  for (MPI_Comm* c : {&row, &grid}) MPI_Comm_free(c);
  for (MPI_Comm* c : {&half_dup, &idup, &cart, &merged, &inter, &node, &half}) MPI_Comm_free(c);
  if (even != MPI_COMM_NULL) MPI_Comm_free(&even);
  if (odd != MPI_COMM_NULL) MPI_Comm_free(&odd);
  MPI_Group_free(&world_group);
  MPI_Group_free(&even_group);
  MPI_Group_free(&odd_group);
  MPI_Finalize();
  return 0;
}
