import halide as hl, sys
T=hl.Target("x86-64-linux-cuda-cuda_capability_80-no_runtime")
V=lambda s: hl.Var(s)
def build(name, static, ain=False, align=False, spec=False, R=4,C=4,TX=32,TY=2,KU=4):
    A=hl.ImageParam(hl.Float(32),2,"A"); B=hl.ImageParam(hl.Float(32),2,"B")
    n,m=hl.Var("n"),hl.Var("m"); k=hl.RDom([(0,A.dim(0).extent())],"k")
    acc=hl.Func("acc"); out=hl.Func("out")
    acc[n,m]=0.0; acc[n,m]+=A[k.x,m]*B[n,k.x]; out[n,m]=acc[n,m]
    if static:
        for p in (A,B):
            p.dim(0).set_bounds(0,1024).dim(1).set_bounds(0,1024).set_stride(1024)
        out.output_buffer().dim(0).set_bounds(0,1024).dim(1).set_bounds(0,1024).set_stride(1024)
    if align:
        for p in (A,B):
            p.dim(1).set_stride((p.dim(1).stride()//4)*4)
    o=out
    if not static:
        cond=(out.output_buffer().dim(0).extent()>=C) & (out.output_buffer().dim(1).extent()>=R)
        ob=out.output_buffer()
        if spec: cond = cond & (A.dim(1).stride() % 4 == 0) & (A.dim(0).min() % 4 == 0) & (B.dim(1).stride() % 4 == 0) & (B.dim(0).min() % 4 == 0) & (ob.dim(1).stride() % 4 == 0) & (ob.dim(0).min() % 4 == 0) & (ob.dim(0).extent() % 4 == 0)
        o=out.specialize(cond)
    o.split(n,V("no"),V("nv"),C,hl.TailStrategy.ShiftInwards).split(m,V("mo"),V("mr"),R,hl.TailStrategy.ShiftInwards).split(V("no"),V("nb"),V("nt"),TX,hl.TailStrategy.GuardWithIf).split(V("mo"),V("mb"),V("mt"),TY,hl.TailStrategy.GuardWithIf) \
       .reorder(V("nv"),V("mr"),V("nt"),V("mt"),V("nb"),V("mb")).gpu_threads(V("nt"),V("mt")).gpu_blocks(V("nb"),V("mb")).vectorize(V("nv")).unroll(V("mr"))
    if not static:
        out.gpu_tile(n,m,V("nb"),V("mb"),V("nt"),V("mt"),TX,TY,hl.TailStrategy.GuardWithIf)
    an,am=acc.args()
    acc.compute_at(out,V("nt")).vectorize(an,C,hl.TailStrategy.GuardWithIf).unroll(am).store_in(hl.MemoryType.Register).bound_extent(an,C).bound_extent(am,R)
    ko,ku=hl.RVar("ko"),hl.RVar("ku")
    acc.update().split(k.x,ko,ku,KU,hl.TailStrategy.GuardWithIf).reorder(an,am,ku,ko).vectorize(an,C,hl.TailStrategy.GuardWithIf).unroll(am).unroll(ku)
    if ain:
        Ai=A.in_(acc)
        Ai.compute_at(acc,ko).vectorize(Ai.args()[0]).unroll(Ai.args()[1])
    out.compile_to_static_library(name,[A,B],name,T)
    out.compile_to({hl.OutputFileType.assembly:name+".s"},[A,B],name,T)
build("dyn_reg",False)
build("dyn_spec",False,spec=True)
build("dyn_spec_ain",False,spec=True,ain=True)
build("dyn_ain",False,ain=True)
build("dyn_align",False,ain=True,align=True)
build("sta_reg",True)
