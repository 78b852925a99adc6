// The one source of the targets that own the precompiled headers (cmake/Pch.cmake).
