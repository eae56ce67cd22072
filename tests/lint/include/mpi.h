/* Minimal MPI declarations for the lint corpus: enough to type-check calls, nothing to link. */
#ifndef LOCKSTEP_LINT_FAKE_MPI_H
#define LOCKSTEP_LINT_FAKE_MPI_H
#ifdef __cplusplus
extern "C" {
#endif
typedef struct ompi_communicator_t* MPI_Comm;
typedef struct ompi_datatype_t* MPI_Datatype;
typedef struct ompi_op_t* MPI_Op;
typedef struct { int MPI_SOURCE, MPI_TAG, MPI_ERROR; } MPI_Status;
extern struct ompi_communicator_t lockstep_fake_comm_world;
extern struct ompi_datatype_t lockstep_fake_int, lockstep_fake_float, lockstep_fake_double, lockstep_fake_char;
extern struct ompi_op_t lockstep_fake_sum, lockstep_fake_max, lockstep_fake_min, lockstep_fake_land;
#define MPI_COMM_WORLD (&lockstep_fake_comm_world)
#define MPI_INT (&lockstep_fake_int)
#define MPI_FLOAT (&lockstep_fake_float)
#define MPI_DOUBLE (&lockstep_fake_double)
#define MPI_CHAR (&lockstep_fake_char)
#define MPI_SUM (&lockstep_fake_sum)
#define MPI_MAX (&lockstep_fake_max)
#define MPI_MIN (&lockstep_fake_min)
#define MPI_LAND (&lockstep_fake_land)
#define MPI_IN_PLACE ((void*)1)
#define MPI_SUCCESS 0
int MPI_Init(int* argc, char*** argv);
int MPI_Finalize(void);
int MPI_Comm_rank(MPI_Comm comm, int* rank);
int MPI_Comm_size(MPI_Comm comm, int* size);
int MPI_Barrier(MPI_Comm comm);
int MPI_Bcast(void* buf, int count, MPI_Datatype type, int root, MPI_Comm comm);
int MPI_Allreduce(const void* in, void* out, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm);
int MPI_Reduce(const void* in, void* out, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm);
int MPI_Allgather(const void* in, int scount, MPI_Datatype stype, void* out, int rcount, MPI_Datatype rtype,
                  MPI_Comm comm);
int MPI_Allgatherv(const void* in, int scount, MPI_Datatype stype, void* out, const int* rcounts,
                   const int* displs, MPI_Datatype rtype, MPI_Comm comm);
int MPI_Gather(const void* in, int scount, MPI_Datatype stype, void* out, int rcount, MPI_Datatype rtype, int root,
               MPI_Comm comm);
int MPI_Send(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm);
int MPI_Recv(void* buf, int count, MPI_Datatype type, int src, int tag, MPI_Comm comm, MPI_Status* status);
int MPI_Abort(MPI_Comm comm, int code);
typedef struct ompi_request_t* MPI_Request;
#define MPI_COMM_NULL ((MPI_Comm)0)
#define MPI_THREAD_MULTIPLE 3
double MPI_Wtime(void);
int MPI_Init_thread(int* argc, char*** argv, int required, int* provided);
int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm* out);
int MPI_Comm_free(MPI_Comm* comm);
int MPI_Cart_create(MPI_Comm old, int ndims, const int* dims, const int* periods, int reorder, MPI_Comm* cart);
int MPI_Iscan(const void* in, void* out, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm, MPI_Request* req);
int MPI_Wait(MPI_Request* req, MPI_Status* status);
int MPI_Allreduce_init(const void* in, void* out, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                       void* info, MPI_Request* req);
typedef struct ompi_group_t* MPI_Group;
int MPI_Comm_group(MPI_Comm comm, MPI_Group* group);
int MPI_Group_incl(MPI_Group group, int n, const int* ranks, MPI_Group* out);
int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm* out);
int MPI_Neighbor_allgather(const void* in, int scount, MPI_Datatype stype, void* out, int rcount,
                           MPI_Datatype rtype, MPI_Comm comm);
#ifdef __cplusplus
}
#endif
#endif
