#include "p2v/runtime/mpi/session.hpp"

#include <mpi.h>

namespace p2v::runtime {

MpiSession::MpiSession() {
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited) MPI_Init(nullptr, nullptr);
  own_ = !inited;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiSession::~MpiSession() {
  int fin = 0;
  MPI_Finalized(&fin);
  if (own_ && !fin) MPI_Finalize();
}

}  // namespace p2v::runtime
