/* A token ring over MPI, for Shoal's MPI launch tests (tests/integration/test_mpi.py).
 *
 * Rank 0 sends a token to rank 1, each rank adds one and passes it to the next, and rank 0
 * checks that it comes back having been counted by every other rank; this goes around ROUNDS
 * times. Every rank first prints where it runs; at the end rank 0 prints
 *     ring: N ranks, token went around R times
 * and the program exits 0. A lost or corrupted token makes rank 0 call MPI_Abort(..., 2).
 *
 *     ring [ROUNDS] [abort]
 * ROUNDS defaults to 100. With "abort", rank 1 (rank 0 alone in a one-rank world) calls
 * MPI_Abort(MPI_COMM_WORLD, 3) before the ring starts, while the other ranks wait in a
 * receive that never completes: the launcher must tear the whole job down.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  int rounds = 100;
  int do_abort = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "abort") == 0) {
      do_abort = 1;
    } else {
      rounds = atoi(argv[i]);
    }
  }

  char host[256] = "";
  gethostname(host, sizeof host);
  const char* node = getenv("SLURMD_NODENAME");
  printf("rank %d of %d on %s (host %s, pid %d)\n", rank, size, node ? node : "?", host,
         (int)getpid());
  fflush(stdout);

  if (do_abort) {
    int aborter = size > 1 ? 1 : 0;
    if (rank == aborter) {
      printf("rank %d: calling MPI_Abort(MPI_COMM_WORLD, 3)\n", rank);
      fflush(stdout);
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
    /* Everyone else blocks here until the launcher kills them. */
    int never = 0;
    MPI_Recv(&never, 1, MPI_INT, aborter, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Finalize();
    return 1;
  }

  if (size == 1) {
    printf("ring: 1 ranks, token went around %d times\n", rounds);
    MPI_Finalize();
    return 0;
  }

  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  for (int r = 0; r < rounds; ++r) {
    int token = 0;
    if (rank == 0) {
      MPI_Send(&token, 1, MPI_INT, right, 7, MPI_COMM_WORLD);
      MPI_Recv(&token, 1, MPI_INT, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (token != size - 1) {
        printf("ring: bad token %d in round %d (expected %d)\n", token, r, size - 1);
        fflush(stdout);
        MPI_Abort(MPI_COMM_WORLD, 2);
      }
    } else {
      MPI_Recv(&token, 1, MPI_INT, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      token += 1;
      MPI_Send(&token, 1, MPI_INT, right, 7, MPI_COMM_WORLD);
    }
  }

  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    printf("ring: %d ranks, token went around %d times\n", size, rounds);
    fflush(stdout);
  }
  MPI_Finalize();
  return 0;
}
