// The collectives' rules (see p2v/reshard/rules.hpp).
#include "p2v/reshard/rules.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <numeric>

#include "detail.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/text_util.hpp"

namespace p2v::reshard {

using namespace detail;
namespace text = engine::text;

// ---- rules ----

const char* to_string(Op op) {
  switch (op) {
    case Op::AllGather:
      return "allgather";
    case Op::DynSlice:
      return "dynslice";
    case Op::AllToAll:
      return "alltoall";
    case Op::AllPermute:
      return "allpermute";
  }
  return "?";
}

Type apply(const Type& t, const Step& s, const Mesh& mesh) {
  Type r = t;
  switch (s.op) {
    case Op::AllGather: {
      require_dim(t, s.dim, s.op);
      require_minor_most(t, s.dim, s.axes, mesh, s.op);
      auto& d = r.dims[s.dim];
      d.axes.erase(d.axes.begin(), d.axes.begin() + static_cast<std::ptrdiff_t>(s.axes.size()));
      d.local *= axes_product(s.axes, mesh);
      break;
    }
    case Op::DynSlice: {
      require_dim(t, s.dim, s.op);
      if (s.axes.empty()) throw Error(fmt::format("dynslice({}): no axis given", s.dim));
      const auto owner = axis_owner(t, mesh);
      for (std::size_t k = 0; k < s.axes.size(); ++k) {
        const int a = s.axes[k];
        if (owner[a] >= 0)
          throw Error(fmt::format("dynslice({}): axis {} is already used by {}; dynslice needs an unused axis", s.dim,
                                  mesh.primes[a].name, dim_name(owner[a])));
        if (std::find(s.axes.begin(), s.axes.begin() + static_cast<std::ptrdiff_t>(k), a) !=
            s.axes.begin() + static_cast<std::ptrdiff_t>(k))
          throw Error(fmt::format("dynslice({}): axis {} is given twice", s.dim, mesh.primes[a].name));
      }
      const auto k = axes_product(s.axes, mesh);
      auto& d = r.dims[s.dim];
      if (d.local % k != 0)
        throw Error(fmt::format("dynslice({}): local size {} of {} is not divisible by |{}| = {}", s.dim, d.local,
                                dim_name(s.dim), axes_to_string(s.axes, mesh), k));
      d.axes.insert(d.axes.begin(), s.axes.begin(), s.axes.end());
      d.local /= k;
      break;
    }
    case Op::AllToAll: {
      require_dim(t, s.dim, s.op);
      require_dim(t, s.dim2, s.op);
      if (s.dim == s.dim2) throw Error(fmt::format("alltoall({},{}): the two dimensions must differ", s.dim, s.dim2));
      require_minor_most(t, s.dim, s.axes, mesh, s.op);
      const auto k = axes_product(s.axes, mesh);
      auto& di = r.dims[s.dim];
      auto& dj = r.dims[s.dim2];
      if (dj.local % k != 0)
        throw Error(fmt::format("alltoall({},{}): local size {} of {} is not divisible by |{}| = {}", s.dim, s.dim2,
                                dj.local, dim_name(s.dim2), axes_to_string(s.axes, mesh), k));
      di.axes.erase(di.axes.begin(), di.axes.begin() + static_cast<std::ptrdiff_t>(s.axes.size()));
      di.local *= k;
      dj.axes.insert(dj.axes.begin(), s.axes.begin(), s.axes.end());
      dj.local /= k;
      break;
    }
    case Op::AllPermute: {
      if (s.target.localtype() != t.localtype())
        throw Error(fmt::format("allpermute: local types differ ({} vs {}); allpermute needs equal local types",
                                to_string(t, mesh), to_string(s.target, mesh)));
      for (std::size_t i = 0; i < t.dims.size(); ++i)
        if (t.dims[i].global != s.target.dims[i].global)
          throw Error(fmt::format("allpermute: global size of {} differs ({} vs {})", dim_name(static_cast<int>(i)),
                                  t.dims[i].global, s.target.dims[i].global));
      validate(s.target, mesh);
      r = s.target;
      break;
    }
  }
  return r;
}

std::string step_to_string(const Step& s, const Mesh& mesh) {
  switch (s.op) {
    case Op::AllGather:
      return fmt::format("allgather({}){{{}}}", s.dim, axes_to_string(s.axes, mesh));
    case Op::DynSlice:
      return fmt::format("dynslice({}){{{}}}", s.dim, axes_to_string(s.axes, mesh));
    case Op::AllToAll:
      return fmt::format("alltoall({},{}){{{}}}", s.dim, s.dim2, axes_to_string(s.axes, mesh));
    case Op::AllPermute:
      return fmt::format("allpermute -> {}", to_string(s.target, mesh));
  }
  return "?";
}

}  // namespace p2v::reshard
