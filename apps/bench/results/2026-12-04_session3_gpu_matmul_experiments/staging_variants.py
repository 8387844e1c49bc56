import halide as hl, sys
N=M=K=1024
T=hl.Target("x86-64-linux-cuda-cuda_capability_80-no_runtime")
def algo():
    A=hl.ImageParam(hl.Float(32),2,"A"); B=hl.ImageParam(hl.Float(32),2,"B")
    n,m=hl.Var("n"),hl.Var("m"); k=hl.RDom([(0,K)],"k")
    acc=hl.Func("acc"); out=hl.Func("out")
    acc[n,m]=0.0; acc[n,m]+=A[k.x,m]*B[n,k.x]; out[n,m]=acc[n,m]
    out.bound(n,0,N).bound(m,0,M)
    for p in (A,B):
        p.dim(0).set_bounds(0,1024).dim(1).set_bounds(0,1024).set_stride(1024)
    out.output_buffer().dim(0).set_bounds(0,1024).dim(1).set_bounds(0,1024).set_stride(1024)
    return A,B,n,m,k,acc,out
V=lambda s: hl.Var(s)
def out_loops(out,n,m,R,C,TX,TY):
    out.split(n,V("no"),V("nv"),C).split(m,V("mo"),V("mr"),R).split(V("no"),V("nb"),V("nt"),TX).split(V("mo"),V("mb"),V("mt"),TY) \
       .reorder(V("nv"),V("mr"),V("nt"),V("mt"),V("nb"),V("mb")).gpu_threads(V("nt"),V("mt")).gpu_blocks(V("nb"),V("mb")).vectorize(V("nv")).unroll(V("mr"))
def reg(name,R,C,TX,TY,KU):
    A,B,n,m,k,acc,out=algo()
    out_loops(out,n,m,R,C,TX,TY)
    an,am=acc.args()
    acc.compute_at(out,V("nt")).vectorize(an).unroll(am).store_in(hl.MemoryType.Register).bound_extent(an,C).bound_extent(am,R)
    acc.update().split(k.x,hl.RVar("ko"),hl.RVar("ku"),KU).reorder(an,am,hl.RVar("ku"),hl.RVar("ko")).vectorize(an).unroll(am).unroll(hl.RVar("ku"))
    out.compile_to_static_library(name,[A,B],name,T)
def smem(name,R,C,TX,TY,KC,reg_acc=True):
    A,B,n,m,k,acc,out=algo()
    out_loops(out,n,m,R,C,TX,TY)
    an,am=acc.args()
    acc.compute_at(out,V("nb"))
    if reg_acc: acc.store_in(hl.MemoryType.Register)
    acc.split(an,V("no"),V("nv"),C).split(am,V("mo"),V("mr"),R).reorder(V("nv"),V("mr"),V("no"),V("mo")).gpu_threads(V("no"),V("mo")).vectorize(V("nv")).unroll(V("mr"))
    ko,ki=hl.RVar("ko"),hl.RVar("ki")
    acc.update().split(k.x,ko,ki,KC).split(an,V("no"),V("nv"),C).split(am,V("mo"),V("mr"),R).reorder(V("nv"),V("mr"),ki,V("no"),V("mo"),ko).gpu_threads(V("no"),V("mo")).vectorize(V("nv")).unroll(V("mr")).unroll(ki)
    As=A.in_(acc); Bs=B.in_(acc)
    for S in (As,Bs): S.compute_at(acc,ko).store_in(hl.MemoryType.GPUShared)
    x,y=As.args()
    # A tile KC x (TY*R): threads TX x TY over it
    As.split(x,V("axo"),V("axi"),min(KC,TX)).split(V("axo"),V("axo"),V("axv"),1).split(y,V("ayo"),V("ayi"),TY*TX//min(KC,TX)).reorder(V("axi"),V("ayi"),V("axv"),V("axo"),V("ayo")).gpu_threads(V("axi"),V("ayi"))
    x,y=Bs.args()
    Bs.split(x,V("bxo"),V("bxv"),C).split(V("bxo"),V("bxoo"),V("bxt"),TX).split(y,V("byo"),V("byt"),TY).reorder(V("bxv"),V("bxt"),V("byt"),V("bxoo"),V("byo")).gpu_threads(V("bxt"),V("byt")).vectorize(V("bxv"))
    out.compile_to_static_library(name,[A,B],name,T)
variants=[]
reg("reg_4x4_32x2_u4",4,4,32,2,4); variants.append("reg_4x4_32x2_u4")
reg("reg_8x4_16x8_u4",8,4,16,8,4); variants.append("reg_8x4_16x8_u4")
for (R,C,TX,TY,KC) in [(4,4,16,16,16),(8,4,16,16,16),(8,4,32,8,16),(4,4,32,8,32),(8,4,16,8,16),(8,4,16,16,32)]:
    nm="smem_%dx%d_%dx%d_k%d"%(R,C,TX,TY,KC); smem(nm,R,C,TX,TY,KC); variants.append(nm)
smem("smemshared_4x4_16x16_k16",4,4,16,16,16,reg_acc=False); variants.append("smemshared_4x4_16x16_k16")
hl.compile_standalone_runtime("rt.o",hl.Target("x86-64-linux-cuda-cuda_capability_80"))
open("variants.txt","w").write("\n".join(variants))
