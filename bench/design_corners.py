#!/usr/bin/env python3
"""How often a maximin initial design puts a coordinate at an end of its domain, against random points.

    python3 bench/design_corners.py

On small discrete grids (210 and 1024 configurations) it draws 300 designs of 6 points each way: maximin
chosen greedily from a random pool of max(64, 16k) points in the [0, 1]-encoded grid, the first point
random (as bayes's initial design, search/bayes_strategy.cpp), and 6 uniformly random points. It prints
the share of coordinates that sit at the lowest or highest value of their parameter. docs/search.md
("Tiny budgets") reads it beside the scores of the first evaluations on recorded spaces.
"""
import random, itertools
def grid(dims): return list(itertools.product(*[range(n) for n in dims]))
def enc(c,dims): return [x/(n-1) for x,n in zip(c,dims)]
def maximin(space,dims,k,rng):
    pool=rng.sample(space,min(len(space),max(64,16*k)))
    X=[enc(c,dims) for c in pool]
    out=[0]; near=[sum((a-b)**2 for a,b in zip(x,X[0])) for x in X]
    while len(out)<k:
        i=max((i for i in range(len(X)) if i not in out), key=lambda i: near[i])
        out.append(i); near=[min(near[j], sum((a-b)**2 for a,b in zip(X[j],X[i]))) for j in range(len(X))]
    return [pool[i] for i in out]
def boundary(c,dims): return sum(1 for x,n in zip(c,dims) if x in (0,n-1))/len(dims)
rng=random.Random(1)
for dims in [(7,6,5),(5,6,7),(3,5,14),(2,3,5,7),(4,4,4,4,4)]:
    sp=grid(dims); k=6
    mm=[boundary(c,dims) for r in range(300) for c in maximin(sp,dims,k,rng)]
    rd=[boundary(c,dims) for r in range(300) for c in rng.sample(sp,k)]
    print(dims, len(sp), "share of coordinates on the domain's ends: maximin %.2f random %.2f"%(sum(mm)/len(mm), sum(rd)/len(rd)))
