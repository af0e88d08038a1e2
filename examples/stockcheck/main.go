// Command stockcheck is the "re-check in 30 minutes" pattern: many orders
// reserve stock at once; each schedules a re-check 30 minutes later on a
// timing wheel (the delay is divided by -scale so that the demo takes
// seconds); an order still unpaid at its re-check is compensated (its stock is
// released), and a payment that arrives after that is refused. It ends with a
// reconciliation proving that stock adds up and that every order was checked
// exactly once.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/purgatory-go/purgatory/timingwheel"
)

type config struct {
	orders  int
	stock   int64
	paid    float64 // share of orders whose payment arrives at all
	recheck time.Duration
	scale   float64
}

func main() {
	var c config
	flag.IntVar(&c.orders, "orders", 100_000, "orders placed at once")
	flag.Int64Var(&c.stock, "stock", 150_000, "units in stock at the start")
	flag.Float64Var(&c.paid, "paid", 0.8, "share of orders that pay at some point in U[0, 1.25 x recheck)")
	flag.DurationVar(&c.recheck, "recheck", 30*time.Minute, "when an order is re-checked")
	flag.Float64Var(&c.scale, "scale", 1000, "divide every delay by this, so the demo takes seconds")
	flag.Parse()
	if _, err := run(c, os.Stdout); err != nil {
		log.Print(err)
		os.Exit(1)
	}
}

// Order states. An order moves from reserved to exactly one of the others.
const (
	reserved int32 = iota
	confirmed
	compensated
)

type order struct {
	qty    int64
	state  atomic.Int32
	checks atomic.Int32
}

type store struct {
	stock                        atomic.Int64
	confirmedUnits, released     atomic.Int64
	confirmed, compensated, late atomic.Int64
	reservedOrders, outOfStock   atomic.Int64
	checksDone                   sync.WaitGroup
	paymentsDone                 sync.WaitGroup
}

// reserve takes qty units if there are that many.
func (s *store) reserve(qty int64) bool {
	for {
		have := s.stock.Load()
		if have < qty {
			return false
		}
		if s.stock.CompareAndSwap(have, have-qty) {
			return true
		}
	}
}

// pay confirms an order still reserved; a payment after compensation is
// refused (and would be refunded).
func (s *store) pay(o *order) {
	defer s.paymentsDone.Done()
	if o.state.CompareAndSwap(reserved, confirmed) {
		s.confirmed.Add(1)
		s.confirmedUnits.Add(o.qty)
	} else {
		s.late.Add(1)
	}
}

// check is the re-check: an order still unpaid is compensated.
func (s *store) check(o *order) {
	defer s.checksDone.Done()
	o.checks.Add(1)
	if o.state.CompareAndSwap(reserved, compensated) {
		s.stock.Add(o.qty)
		s.released.Add(o.qty)
		s.compensated.Add(1)
	}
}

type reconciliation struct {
	initial, available, sold         int64
	reserved, outOfStock             int64
	confirmed, compensated, latePays int64
	checkedOnce, checkedOther        int
}

func run(c config, out io.Writer) (reconciliation, error) {
	if c.orders < 1 || c.stock < 0 || c.paid < 0 || c.paid > 1 || c.recheck <= 0 || c.scale < 1 {
		return reconciliation{}, errors.New("stockcheck: need orders >= 1, stock >= 0, 0 <= paid <= 1, recheck > 0, scale >= 1")
	}
	tw, err := timingwheel.New()
	if err != nil {
		return reconciliation{}, err
	}
	defer tw.Stop()

	scaled := func(d time.Duration) time.Duration { return time.Duration(float64(d) / c.scale) }
	var s store
	s.stock.Store(c.stock)
	rng := rand.New(rand.NewPCG(7, 7))
	orders := make([]*order, c.orders)
	begin := time.Now()
	for i := range orders {
		o := &order{qty: 1 + rng.Int64N(3)}
		orders[i] = o
		if !s.reserve(o.qty) {
			s.outOfStock.Add(1)
			continue
		}
		s.reservedOrders.Add(1)
		s.checksDone.Add(1)
		tw.AfterFunc(scaled(c.recheck), func() { s.check(o) })
		if rng.Float64() < c.paid {
			s.paymentsDone.Add(1)
			payAt := time.Duration(rng.Int64N(int64(c.recheck) * 5 / 4))
			tw.AfterFunc(scaled(payAt), func() { s.pay(o) })
		}
	}
	fmt.Fprintf(out, "stockcheck: %d orders placed in %v; re-checks due in %v (%v / %.0f); %d timers pending\n",
		c.orders, time.Since(begin).Round(time.Millisecond), scaled(c.recheck), c.recheck, c.scale, tw.Len())
	s.checksDone.Wait()
	s.paymentsDone.Wait()

	r := reconciliation{
		initial: c.stock, available: s.stock.Load(), sold: s.confirmedUnits.Load(),
		reserved: s.reservedOrders.Load(), outOfStock: s.outOfStock.Load(),
		confirmed: s.confirmed.Load(), compensated: s.compensated.Load(), latePays: s.late.Load(),
	}
	// Only reserved orders get a re-check, so "checked exactly once" for as
	// many orders as were reserved, and none more often, means none was lost
	// or doubled.
	for _, o := range orders {
		switch n := o.checks.Load(); {
		case n == 1:
			r.checkedOnce++
		case n > 1:
			r.checkedOther++
		}
	}
	fmt.Fprintf(out, "orders: %d reserved, %d out of stock | %d paid in time, %d compensated at re-check, %d late payments refused\n",
		r.reserved, r.outOfStock, r.confirmed, r.compensated, r.latePays)
	fmt.Fprintf(out, "stock: initial %d = available %d + sold %d: %v\n", r.initial, r.available, r.sold, r.initial == r.available+r.sold)
	fmt.Fprintf(out, "re-checks: %d of %d reserved orders checked exactly once, %d checked more than once\n",
		r.checkedOnce, r.reserved, r.checkedOther)
	if r.initial != r.available+r.sold || int64(r.checkedOnce) != r.reserved || r.checkedOther != 0 ||
		r.confirmed+r.compensated != r.reserved || r.reserved+r.outOfStock != int64(c.orders) {
		return r, fmt.Errorf("stockcheck: reconciliation failed: %+v", r)
	}
	return r, nil
}
