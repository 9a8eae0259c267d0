// The registry of instruction families: one instance of each, in TESSEL_INSTRUCTION_FAMILIES order.
#include "core/instruction_family.h"

namespace tessel {

const std::vector<const InstructionFamily*>& instruction_families() {
  static const std::vector<const InstructionFamily*> all = {
#define TESSEL_FAMILY_ENTRY_(factory) &factory(),
      TESSEL_INSTRUCTION_FAMILIES(TESSEL_FAMILY_ENTRY_)
#undef TESSEL_FAMILY_ENTRY_
  };
  return all;
}

}  // namespace tessel
