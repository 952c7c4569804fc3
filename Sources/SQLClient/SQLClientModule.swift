@_exported import TDS
