package service

import "github.com/pipebench/pipebench/sut/healthevents"

// The system under test's configuration and wire vocabulary, declared in
// package healthevents (which pipebench links without the service).
type (
	Config      = healthevents.Config
	StoreConfig = healthevents.StoreConfig
	KubeConfig  = healthevents.KubeConfig
	Effect      = healthevents.Effect
	EffectsPage = healthevents.EffectsPage
	Schema      = healthevents.Schema
)

const (
	StoreFerretDB = healthevents.StoreFerretDB
	StoreMongoDB  = healthevents.StoreMongoDB
	StoreNone     = healthevents.StoreNone
	Service       = healthevents.Service
	MethodReport  = healthevents.MethodReport
	MethodStream  = healthevents.MethodStream
)

var (
	DefaultConfig = healthevents.DefaultConfig
	CompileSchema = healthevents.CompileSchema
)
