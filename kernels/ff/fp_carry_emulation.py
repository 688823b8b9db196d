# Emulates the PTX carry semantics (mad.lo.cc / madc.hi.cc / add.cc / addc) of the two-chain
# Montgomery multiplication and the squaring in kernels/ff/fp.cuh, statement by statement, and
# checks them against Python integers on edge and random operands; counts any carry the
# kernels drop at the top that is not zero. Run: python3 kernels/ff/fp_carry_emulation.py
# (a development check of the carry bookkeeping; the device tests check the kernels).
import random
M=0xffffffff
p=0x1a0111ea397fe69a4b1ba7b6434bacd764774b84f38512bf6730d2a0f6b0f6241eabfffeb153ffffb9feffffffffaaab
P=[(p>>(32*i))&M for i in range(12)]
PINV=0xfffcfffd
assert (p*PINV)%2**32 == 2**32-1
R=2**384
class CC: c=0
cc=CC()
def lo(a,b): return (a*b)&M
def hi(a,b): return (a*b)>>32
def mad_lo_cc(a,b,c): s=lo(a,b)+c; cc.c=s>>32; return s&M
def madc_lo_cc(a,b,c): s=lo(a,b)+c+cc.c; cc.c=s>>32; return s&M
def mad_hi_cc(a,b,c): s=hi(a,b)+c; cc.c=s>>32; return s&M
def madc_hi_cc(a,b,c): s=hi(a,b)+c+cc.c; cc.c=s>>32; return s&M
def madc_hi(a,b,c): s=hi(a,b)+c+cc.c; assert s>>32==0 or True; return s&M
def madc_lo(a,b,c): s=lo(a,b)+c+cc.c; return s&M
def add_cc(a,b): s=a+b; cc.c=s>>32; return s&M
def addc_cc(a,b): s=a+b+cc.c; cc.c=s>>32; return s&M
def addc(a,b):
    s=a+b+cc.c
    global dropped
    if s>>32: dropped+=1
    return s&M
dropped=0
def mul_pairs(acc,a,off,b,n):
    for j in range(0,n,2): acc[j]=lo(a[off+j],b); acc[j+1]=hi(a[off+j],b)
def mad_pairs_cc(acc,a,off,b,n):
    global dropped
    acc[0]=mad_lo_cc(a[off],b,acc[0]); acc[1]=madc_hi_cc(a[off],b,acc[1])
    for j in range(2,n,2): acc[j]=madc_lo_cc(a[off+j],b,acc[j]); acc[j+1]=madc_hi_cc(a[off+j],b,acc[j+1])
def mad_pairs_shift(odd,a,off,b):
    global dropped
    for j in range(0,10,2):
        n0=madc_lo_cc(a[off+j],b,odd[j+2]); n1=madc_hi_cc(a[off+j],b,odd[j+3]); odd[j]=n0; odd[j+1]=n1
    odd[10]=madc_lo_cc(a[off+10],b,0); s=hi(a[off+10],b)+cc.c
    if s>>32: dropped+=1
    odd[11]=s&M
def redc_row(even,odd,first):
    if first:
        m=(even[0]*PINV)&M; mul_pairs(odd,P,1,m,12)
    else:
        even[0]=add_cc(even[0],odd[1]); m=(even[0]*PINV)&M; mad_pairs_shift(odd,P,1,m)
    mad_pairs_cc(even,P,0,m,12); odd[11]=addc(odd[11],0)
def mul_row(even,odd,a,b,first):
    global dropped
    if first:
        mul_pairs(odd,a,1,b,12); mul_pairs(even,a,0,b,12)
    else:
        even[0]=add_cc(even[0],odd[1]); mad_pairs_shift(odd,a,1,b); mad_pairs_cc(even,a,0,b,12); odd[11]=addc(odd[11],0)
    m=(even[0]*PINV)&M
    mad_pairs_cc(odd,P,1,m,12)
    if cc.c: dropped+=1
    mad_pairs_cc(even,P,0,m,12); odd[11]=addc(odd[11],0)
def merge(even,odd):
    r=[0]*12
    r[0]=add_cc(even[0],odd[1])
    for i in range(1,11): r[i]=addc_cc(even[i],odd[i+1])
    r[11]=addc(even[11],0)
    return r
def reduce_once(a):
    t=[0]*12; s=a[0]-P[0]; t[0]=s&M; b=1 if s<0 else 0
    for i in range(1,12): s=a[i]-P[i]-b; t[i]=s&M; b=1 if s<0 else 0
    return a if b else t
def toint(l): return sum(x<<(32*i) for i,x in enumerate(l))
def limbs(x): return [(x>>(32*i))&M for i in range(12)]
def fp_mul(a,b):
    even=[0]*12; odd=[0]*12
    for i in range(0,12,2):
        mul_row(even,odd,a,b[i],i==0); mul_row(odd,even,a,b[i+1],False)
    return reduce_once(merge(even,odd))
def fp_sqr(a):
    global dropped
    E=[0]*24; O=[0]*24
    for i in range(11):
        ai=a[i]
        O[2*i+1]=mad_lo_cc(ai,a[i+1],O[2*i+1]); O[2*i+2]=madc_hi_cc(ai,a[i+1],O[2*i+2])
        j=i+3
        while j<12:
            O[i+j]=madc_lo_cc(ai,a[j],O[i+j]); O[i+j+1]=madc_hi_cc(ai,a[j],O[i+j+1]); j+=2
        O[i+j]=addc(O[i+j],0)
        if i+2<12:
            E[2*i+2]=mad_lo_cc(ai,a[i+2],E[2*i+2]); E[2*i+3]=madc_hi_cc(ai,a[i+2],E[2*i+3])
            k=i+4
            while k<12:
                E[i+k]=madc_lo_cc(ai,a[k],E[i+k]); E[i+k+1]=madc_hi_cc(ai,a[k],E[i+k+1]); k+=2
            E[i+k]=addc(E[i+k],0)
    t=[0]*24
    t[0]=add_cc(E[0],O[0])
    for k in range(1,23): t[k]=addc_cc(E[k],O[k])
    t[23]=addc(E[23],O[23])
    t[0]=add_cc(t[0],t[0])
    for k in range(1,23): t[k]=addc_cc(t[k],t[k])
    t[23]=addc(t[23],t[23])
    t[0]=mad_lo_cc(a[0],a[0],t[0]); t[1]=madc_hi_cc(a[0],a[0],t[1])
    for i in range(1,11): t[2*i]=madc_lo_cc(a[i],a[i],t[2*i]); t[2*i+1]=madc_hi_cc(a[i],a[i],t[2*i+1])
    t[22]=madc_lo_cc(a[11],a[11],t[22]); s_=hi(a[11],a[11])+t[23]+cc.c
    if s_>>32: dropped+=1
    t[23]=s_&M
    aa=toint(a); assert toint(t)==aa*aa, "wide square"
    even=t[:12]; odd=[0]*12
    for i in range(0,12,2):
        redc_row(even,odd,i==0); redc_row(odd,even,False)
    lo_=merge(even,odd)
    s=[0]*12
    s[0]=add_cc(lo_[0],t[12])
    for i in range(1,11): s[i]=addc_cc(lo_[i],t[12+i])
    s[11]=addc(lo_[11],t[23])
    return reduce_once(s)
Rinv=pow(R,-1,p)
random.seed(1)
tests=[0,1,p-1,p-2,2**380,(2**381-1)%p]+[random.randrange(p) for _ in range(3000)]
for k,x in enumerate(tests):
    y=tests[(k*7+3)%len(tests)]
    r=toint(fp_mul(limbs(x),limbs(y)))
    assert r==x*y*Rinv%p,(k,hex(x),hex(y))
    s=toint(fp_sqr(limbs(x)))
    assert s==x*x*Rinv%p,(k,hex(x))
# edge: all-ones-ish limbs near p
for x in [p-1]*3+[p-2**300]:
    assert toint(fp_mul(limbs(x),limbs(x)))==x*x*Rinv%p
print("ok; dropped nonzero carries:",dropped)
