// NCCL's topology XML dialect (what NCCL_TOPO_FILE takes and NCCL_TOPO_DUMP_FILE writes,
// and what clouds ship for their VMs) <-> the node topology model (topo/node_topo.h).
//
//   <system version="1">
//     <cpu numaid="0" affinity="0000ffff,0000ffff" arch="x86_64" vendor="GenuineIntel" ...>
//       <pci busid="0000:03:00.0" class="0x060400" link_speed="16.0 GT/s PCIe" link_width="16">
//         <pci busid="0000:07:00.0" class="0x030200" vendor="0x10de" device="0x2330" ...>
//           <gpu dev="0" sm="90" rank="0" gdr="1">
//             <nvlink target="0000:a1:00.0" count="18" tclass="0x068000"/>   (an NVSwitch)
//             <nvlink target="0000:0a:00.0" count="2" tclass="0x030200"/>    (a GPU)
//             <gcoll_p2p target="0000:0a:00.0" state="denied"/>              (gcoll's own)
//           </gpu>
//         </pci>
//         <pci busid="0000:0c:00.0" class="0x020000" ...>
//           <nic><net name="mlx5_0" dev="0" speed="200000" port="1" gdr="1" .../></nic>
//         </pci>
//       </pci>
//     </cpu>
//   </system>
//
// What a file omits (uuid, NUMA affinity, NICs, the PCI levels) stays unknown; elements
// and attributes gcoll does not know are ignored (NCCL's reader ignores gcoll's
// <gcoll_p2p> likewise). gcoll's extra GPU attribute `uuid` is one NCCL ignores too.
#pragma once

#include <string>

#include "topo/node_topo.h"

namespace gcoll {
namespace topo {

// false with *error set ("line 12: ...") on text that is not such a file.
bool read_topo_xml(const std::string &text, NodeTopo *out, std::string *error);
bool read_topo_file(const std::string &path, NodeTopo *out, std::string *error);
// The same dialect; read_topo_xml(write_topo_xml(t)) gives t back.
std::string write_topo_xml(const NodeTopo &t);

}  // namespace topo
}  // namespace gcoll
