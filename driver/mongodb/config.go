package mongodb

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/pipebench/pipebench"
)

// The operations the driver makes for each item.
const (
	OpInsert       = "insert"        // insertOne
	OpInsertUpdate = "insert-update" // insertOne, then updateOne of that document by _id
)

// Config configures the driver.
type Config struct {
	// URL is the store's mongodb:// connection string; empty: the
	// system under test's "mongodb" endpoint (the healthevents service's
	// store). Its password, if any, is never printed.
	URL pipebench.Secret `yaml:"url" json:"url,omitempty"`
	// Database and Collection receive the documents.
	Database string `yaml:"database" json:"database"`
	// Collection is the collection the benchmark writes to.
	Collection string `yaml:"collection" json:"collection"`
	// Operation is insert or insert-update (the fault-quarantine
	// benchmark's pair: the event inserted, then marked quarantined).
	Operation string `yaml:"operation" json:"operation"`
	// Timeout bounds one item's operations.
	Timeout pipebench.Duration `yaml:"timeout" json:"timeout"`
}

func defaultConfig() *Config {
	return &Config{Database: "nvsentinel", Collection: "HealthEvents", Operation: OpInsertUpdate, Timeout: pipebench.Duration(10 * time.Second)}
}

// Validate reports every problem, each prefixed with its key.
func (c *Config) Validate() error {
	var errs []error
	if c.URL != "" {
		if u, err := url.Parse(c.URL.Reveal()); err != nil || (u.Scheme != "mongodb" && u.Scheme != "mongodb+srv") {
			errs = append(errs, errors.New("url: not a mongodb:// or mongodb+srv:// connection string"))
		}
	}
	if c.Database == "" || c.Collection == "" {
		errs = append(errs, errors.New("database, collection: must not be empty"))
	}
	if c.Operation != OpInsert && c.Operation != OpInsertUpdate {
		errs = append(errs, fmt.Errorf("operation: %q is not insert or insert-update", c.Operation))
	}
	if c.Timeout <= 0 {
		errs = append(errs, errors.New("timeout: must be more than 0"))
	}
	return errors.Join(errs...)
}
