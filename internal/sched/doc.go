// Package sched puts the interleaving checker's scheduling points into the
// code that ships, as loom's cfg(loom) puts its own into tokio's.
//
// The wheel and the purgatory call At before each access to state that
// other goroutines share (a state word's load and compare-and-swap, a
// list's walking word, the driver's sleep), and lock their mutexes through
// Mutex. In a normal build At is an empty function, which the compiler
// inlines away, and Mutex is sync.Mutex itself: the library pays nothing.
//
// Built with -tags purgatorycheck, At and Mutex hand control to the
// checker while one runs (Start): each goroutine that reaches a point waits
// there until the checker lets it go on, so that one goroutine runs at a
// time, from one point to its next, in the order the checker chooses; a
// goroutine that locks a Mutex waits until the checker lets it, which it
// does only while nobody holds it. The checker itself (Explore) runs every
// scenario's paths inside a testing/synctest bubble, whose Wait tells it
// when every goroutine has reached a point or blocked, and whose clock is a
// path of its own. With no checker running, the tagged build behaves as the
// normal one.
//
// This package is for the library and its tests only.
package sched
