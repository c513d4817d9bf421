#pragma once
// Device meshes of `p2v reshard` (docs/reshard.md "Types"): the user's named axes and their split
// into prime factors, on which every type is stored.
#include <cstdint>
#include <string>
#include <vector>

namespace p2v::reshard {

// A mesh as the user wrote it (`x=4,y=4`) and its split into prime factors. Types are always
// stored over the prime axes; `x:4` becomes `x[0]:2, x[1]:2` with i_x = i_x[0] + 2·i_x[1].
// Devices are numbered in mixed radix over the user's axes, first axis most significant.
struct Mesh {
  struct Axis {
    std::string name;
    int size = 1;
  };
  struct PrimeAxis {
    std::string name;  // `x` when x is prime, else `x[k]`
    int size = 1;
    int parent = 0;           // index into axes
    std::int64_t stride = 1;  // weight in the parent's coordinate
  };
  std::vector<Axis> axes;
  std::vector<PrimeAxis> primes;
  std::vector<std::vector<int>> factors;  // per user axis: its prime axes, minor first

  std::int64_t num_devices() const;
  int axis_index(const std::string& name) const;  // -1 when absent
  // Prime-axis coordinates of a device, and back.
  std::vector<int> point(std::int64_t device) const;
  std::int64_t device(const std::vector<int>& prime_point) const;
};

// "x=4,y=4", "x:4,y:4" or "{x:4, y:4}". Throws p2v::Error.
Mesh parse_mesh(const std::string& spec);

}  // namespace p2v::reshard
