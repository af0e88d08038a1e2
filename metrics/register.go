package metrics

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers each collector with reg, as reg.Register does, and
// stops at the first error. Where a purgatory's or a wheel's collector meets
// one of the same name already registered, the error says which name and
// what to do, and wraps reg's prometheus.AlreadyRegisteredError, whose own
// message ("duplicate metrics collector registration attempted") names
// nothing. Names are checked here, where they collide, and not by
// purgatory.New: a name need only be unique within a registry, and a process
// may hold several purgatories of one name (a test's, or one per tenant
// behind prometheus.WrapRegistererWith).
func Register(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	for _, c := range cs {
		err := reg.Register(c)
		var dup prometheus.AlreadyRegisteredError
		switch {
		case err == nil:
			continue
		case !errors.As(err, &dup):
			return err
		}
		switch c := c.(type) {
		case *purgatoryCollector:
			return fmt.Errorf("metrics: a purgatory named %q is registered already; give each purgatory a name of its own (purgatory.New's first argument), or each a registry: %w", c.src.Name(), err)
		case *wheelCollector:
			return fmt.Errorf("metrics: a wheel named %q is registered already; give each wheel a name of its own (NewTimingWheelCollector's second argument): %w", c.name, err)
		}
		return err
	}
	return nil
}

// MustRegister is Register that panics on an error, as
// prometheus.MustRegister does.
func MustRegister(reg prometheus.Registerer, cs ...prometheus.Collector) {
	if err := Register(reg, cs...); err != nil {
		panic(err)
	}
}
